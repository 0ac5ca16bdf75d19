// kill_soak: many kills of workers or of the scheduler, each in a fresh job
// of the real daemons on 127.0.0.1 (docs/failures.md, "Soak"). Prints one
// line per round and the recovery time's median and maximum; exits 1 at
// the first round that did not end correctly.
//
//   kill_soak worker ROUNDS DATA_DIR   a training job (LR, FTRL, 2 servers
//       with 2 copies, 3 workers, bounded delay 2, 6 epochs) on the data in
//       DATA_DIR (petrel-datagen, tests/harness/lr_job.h); worker (round %
//       3) is killed (SIGKILL) after its first progress report. Recovery:
//       from the kill to the scheduler's line handing its data to the
//       others. Correct: every other process exits 0 and train_examples is
//       6 epochs of the data (each example counted once).
//   kill_soak scheduler ROUNDS          the check job (2 servers, 2
//       petrel-worker check jobs pushing and pulling 100 keys); the
//       scheduler is killed (SIGKILL) while they push and a
//       `petrel-scheduler --recover` started on its port at once.
//       Recovery: from the kill to the new scheduler's "recovered the job".
//       Correct: every worker's sums exact (ok=true), every process exits 0.
//
// Run by tools/fault/kill-soak.sh.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(90);
constexpr int kWorkers = 3;
constexpr int kEpochs = 6;

// Polls `p`'s output for `text`; the time it was first seen.
absl::StatusOr<absl::Time> WaitForText(Subprocess* p, const std::string& text,
                                       absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (absl::StrContains(p->Output(), text)) return absl::Now();
    absl::SleepFor(absl::Milliseconds(5));  // polling, with a deadline
  }
  return absl::DeadlineExceededError(absl::StrCat("no \"", text, "\""));
}

// Every process of `cluster` exits, 0 except `killed`.
absl::Status ExpectClean(DaemonCluster& cluster, const Subprocess* killed) {
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  if (!codes.ok()) return codes.status();
  int failed = 0;
  for (const auto& [name, code] : *codes) failed += code != 0;
  if (failed != (killed != nullptr ? 1 : 0)) {
    return absl::InternalError(
        absl::StrCat(failed, " process(es) failed\n", cluster.Output()));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> WorkerRound(int round, const std::string& data,
                                   int examples) {
  const std::string config =
      absl::StrCat(data, "/soak_", round % 2, ".textproto");
  FILE* f = std::fopen(config.c_str(), "w");
  if (f == nullptr) return absl::InternalError("cannot write " + config);
  std::fprintf(f,
               "%s\ntrain { batch_size: 256 epochs: %d "
               "progress_interval_s: 0.2 }\n",
               LrJobText(data, kWorkers, 2).c_str(), kEpochs);
  std::fclose(f);
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 2;
  o.num_workers = kWorkers;
  o.flags = {"--config=" + config, "--heartbeat_interval_ms=100"};
  // A kill -9 is seen by the connection watch (300 ms); the heartbeat
  // timeout only catches hangs, and 1 s declares live workers dead on a
  // loaded machine.
  o.scheduler_flags = {"--heartbeat_timeout_s=5"};
  DaemonCluster cluster(o);
  if (absl::Status s = cluster.StartScheduler(); !s.ok()) return s;
  for (int rank = 0; rank < 2; ++rank) {
    absl::StatusOr<Subprocess*> s =
        cluster.StartNode("petrel-server", {absl::StrCat("--rank=", rank)});
    if (!s.ok()) return s.status();
  }
  std::vector<Subprocess*> workers;
  for (int rank = 0; rank < kWorkers; ++rank) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker", {"--job=train", "--timeout_s=30", "--worker_progress",
                          absl::StrCat("--rank=", rank)});
    if (!w.ok()) return w.status();
    workers.push_back(*w);
  }
  const int victim = round % kWorkers;
  absl::StatusOr<absl::Time> training = WaitForText(
      workers[victim], absl::StrCat("progress worker=", victim), kTimeout);
  if (!training.ok()) return training.status();
  const absl::Time killed = absl::Now();
  workers[victim]->Signal(SIGKILL);
  absl::StatusOr<absl::Time> moved =
      WaitForText(cluster.scheduler(),
                  absl::StrCat("worker ", victim, " died at epoch"), kTimeout);
  if (!moved.ok()) return moved.status();
  if (absl::Status s = ExpectClean(cluster, workers[victim]); !s.ok()) {
    return s;
  }
  std::string out;
  for (Subprocess* w : workers) out += w->Output();
  const double trained =
      ValueAfter(out, "final test_logloss", "train_examples");
  if (trained != static_cast<double>(kEpochs) * examples) {
    return absl::DataLossError(absl::StrCat("train_examples ", trained,
                                            ", expected ", kEpochs * examples));
  }
  return absl::ToDoubleMilliseconds(*moved - killed);
}

absl::StatusOr<double> SchedulerRound() {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 2;
  o.num_workers = 2;
  o.flags = {"--join_timeout_s=20", "--heartbeat_interval_ms=200",
             "--scheduler_grace_s=15"};
  DaemonCluster cluster(o);
  if (absl::Status s = cluster.StartScheduler(); !s.ok()) return s;
  std::vector<Subprocess*> nodes, workers;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    if (!s.ok()) return s.status();
    nodes.push_back(*s);
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker",
        {"--job=check", "--rounds=3000", "--num_keys=100", "--timeout_s=30"});
    if (!w.ok()) return w.status();
    nodes.push_back(*w);
    workers.push_back(*w);
  }
  for (Subprocess* n : nodes) {
    if (absl::StatusOr<Announce> a = cluster.WaitReady(n); !a.ok()) {
      return a.status();
    }
  }
  const absl::Time killed = absl::Now();
  cluster.scheduler()->Signal(SIGKILL);
  if (absl::StatusOr<int> c = cluster.scheduler()->Wait(kTimeout); !c.ok()) {
    return c.status();
  }
  std::vector<std::string> argv = {
      std::string(PETREL_BIN_DIR) + "/petrel-scheduler",
      absl::StrCat("--port=", cluster.scheduler_announce().port),
      "--recover",
      "--num_servers=2",
      "--num_workers=2",
      "--join_timeout_s=20",
      "--heartbeat_interval_ms=200"};
  for (const std::string& f : LoopbackFlags()) argv.push_back(f);
  absl::StatusOr<std::unique_ptr<Subprocess>> scheduler = StartProgram(argv);
  if (!scheduler.ok()) return scheduler.status();
  absl::StatusOr<absl::Time> recovered =
      WaitForText(scheduler->get(), "recovered the job", kTimeout);
  if (!recovered.ok()) {
    return absl::Status(recovered.status().code(),
                        absl::StrCat(recovered.status().message(), "\n",
                                     (*scheduler)->Output(), cluster.Output()));
  }
  for (Subprocess* w : workers) {
    absl::StatusOr<int> code = w->Wait(kTimeout);
    if (!code.ok() || *code != 0 ||
        !absl::StrContains(w->Output(), "ok=true")) {
      return absl::DataLossError(
          absl::StrCat("a worker did not end with exact sums\n",
                       (*scheduler)->Output(), cluster.Output()));
    }
  }
  absl::StatusOr<int> code = (*scheduler)->Wait(kTimeout);
  if (!code.ok() || *code != 0) {
    return absl::InternalError(absl::StrCat("the recovered scheduler failed\n",
                                            (*scheduler)->Output()));
  }
  for (Subprocess* n : nodes) {
    absl::StatusOr<int> c = n->Wait(kTimeout);
    if (!c.ok() || *c != 0) {
      return absl::InternalError("a node failed\n" + cluster.Output());
    }
  }
  return absl::ToDoubleMilliseconds(*recovered - killed);
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 50;
  const std::string data = argc > 3 ? argv[3] : "";
  if ((mode != "worker" && mode != "scheduler") || rounds < 1 ||
      (mode == "worker" && data.empty())) {
    std::fprintf(stderr,
                 "usage: kill_soak worker ROUNDS DATA_DIR | kill_soak "
                 "scheduler ROUNDS\n");
    return 2;
  }
  constexpr int kExamples = 20000;
  if (mode == "worker") {
    absl::Status s = petrel::GenerateLrData(PETREL_BIN_DIR, data, kExamples,
                                            absl::Minutes(2));
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    absl::StatusOr<double> t = mode == "worker"
                                   ? petrel::WorkerRound(r, data, kExamples)
                                   : petrel::SchedulerRound();
    if (!t.ok()) {
      std::fprintf(stderr, "round %d: %s\n", r, t.status().ToString().c_str());
      return 1;
    }
    std::printf("round %d: %s killed, recovered after %.0f ms; %s\n", r,
                mode == "worker"
                    ? absl::StrCat("worker ", r % petrel::kWorkers).c_str()
                    : "scheduler",
                *t,
                mode == "worker" ? "exit 0, train_examples exact"
                                 : "exit 0, sums exact");
    std::fflush(stdout);
    ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "%s kills: %d, all ended correctly; recovery p50 %.0f ms, max "
      "%.0f ms\n",
      mode.c_str(), rounds, ms[ms.size() / 2], ms.back());
  return 0;
}

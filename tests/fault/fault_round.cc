#include "tests/fault/fault_round.h"

#include <fstream>
#include <memory>
#include <utility>

#include <signal.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "base/out_of_job.h"
#include "base/status_macros.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"
#include "tests/harness/netns_lab.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(90);
// Well above the stalls of a loaded 2-core machine.
constexpr int kHeartbeatTimeoutS = 4;
// A fault meant to heal before anyone is declared dead.
constexpr absl::Duration kBrief = absl::Seconds(1);
// The exit of a server hit by a brief fault: 0 (it stayed in the job), or
// kExitOutOfJob where the machine stalled it past the heartbeat timeout
// too (then it was fenced, which is as safe).
constexpr int kStaysOrFenced = -1;
// A check worker's push rounds: enough to still be pushing when the fault
// has played out. Only a server cut off from the scheduler alone does not
// hold the workers up, so they must outlast the heartbeat timeout.
int CheckRounds(Fault fault) {
  return fault == Fault::kServerCut ? 30000 : 12000;
}
constexpr int kKeys = 300;
constexpr int kCheckWorkers = 2;
constexpr int kTrainWorkers = 3;
constexpr int kEpochs = 6;
// The hosts of the lab: the scheduler, then the servers, then the workers.
constexpr int kHosts = 6;

bool WaitForText(Subprocess* p, const std::string& text,
                 absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (absl::StrContains(p->Output(), text)) return true;
    absl::SleepFor(absl::Milliseconds(10));  // polling, with a deadline
  }
  return false;
}

// One round's job. The lab outlives every process (declared first).
struct Round {
  std::unique_ptr<NetnsLab> lab;
  std::unique_ptr<DaemonCluster> cluster;
  std::unique_ptr<Subprocess> recovered_scheduler;
  std::vector<Subprocess*> servers;
  std::vector<Subprocess*> workers;

  Placement Place(int host) const {
    return lab != nullptr ? lab->placement(host) : Placement{};
  }
  std::string Output() const {
    std::string out = cluster != nullptr ? cluster->Output() : "";
    if (recovered_scheduler != nullptr) {
      absl::StrAppend(&out, "----- recovered scheduler -----\n",
                      recovered_scheduler->Output());
    }
    return out;
  }
  absl::Status Failed(const std::string& what) const {
    return absl::InternalError(absl::StrCat(what, "\n", Output()));
  }
};

absl::Status StartJob(const FaultRoundOptions& options, Fault fault,
                      Round* round) {
  const bool training = fault == Fault::kWorkerKill;
  if (options.partitions) {
    PETREL_ASSIGN_OR_RETURN(round->lab, NetnsLab::Create(kHosts));
  }
  const int num_servers = training ? 2 : 3;
  const int num_workers = training ? kTrainWorkers : kCheckWorkers;
  DaemonCluster::Options o;
  o.bin_dir = options.bin_dir;
  o.num_servers = num_servers;
  o.num_workers = num_workers;
  o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200"};
  o.scheduler_flags = {
      absl::StrCat("--heartbeat_timeout_s=", kHeartbeatTimeoutS),
      "--replicas=2"};
  o.scheduler_placement = round->Place(0);
  if (training) {
    const std::string config =
        absl::StrCat(options.data_dir, "/job-", getpid(), ".textproto");
    std::ofstream(config) << LrJobText(options.data_dir, kTrainWorkers, 2)
                          << "train { batch_size: 256 epochs: " << kEpochs
                          << " progress_interval_s: 0.2 }\n";
    o.flags.push_back("--config=" + config);
  }
  round->cluster = std::make_unique<DaemonCluster>(o);
  DaemonCluster& c = *round->cluster;
  PETREL_RETURN_IF_ERROR(c.StartScheduler());
  for (int rank = 0; rank < num_servers; ++rank) {
    PETREL_ASSIGN_OR_RETURN(
        Subprocess * s,
        c.StartNode("petrel-server", {absl::StrCat("--rank=", rank)}, {},
                    round->Place(1 + rank)));
    round->servers.push_back(s);
  }
  for (int rank = 0; rank < num_workers; ++rank) {
    std::vector<std::string> args =
        training
            ? std::vector<std::string>{"--job=train", "--timeout_s=30",
                                       "--worker_progress"}
            : std::vector<std::string>{
                  "--job=check", absl::StrCat("--rounds=", CheckRounds(fault)),
                  absl::StrCat("--num_keys=", kKeys), "--inflight=8",
                  "--timeout_s=30"};
    args.push_back(absl::StrCat("--rank=", rank));
    PETREL_ASSIGN_OR_RETURN(Subprocess * w,
                            c.StartNode("petrel-worker", std::move(args), {},
                                        round->Place(1 + num_servers + rank)));
    round->workers.push_back(w);
  }
  for (Subprocess* s : round->servers) {
    PETREL_RETURN_IF_ERROR(c.WaitReady(s).status());
  }
  for (Subprocess* w : round->workers) {
    PETREL_RETURN_IF_ERROR(c.WaitReady(w).status());
  }
  return absl::OkStatus();
}

// kill -9 of the scheduler, and a --recover one on its port at once.
absl::Status RestartScheduler(const FaultRoundOptions& options, Round* round) {
  DaemonCluster& c = *round->cluster;
  c.scheduler()->Signal(SIGKILL);
  PETREL_RETURN_IF_ERROR(c.scheduler()->Wait(kTimeout).status());
  const Placement place = round->Place(0);
  std::vector<std::string> argv = place.prefix;
  for (std::string a :
       {options.bin_dir + "/petrel-scheduler",
        absl::StrCat("--port=", c.scheduler_announce().port),
        std::string("--recover"), std::string("--num_servers=3"),
        absl::StrCat("--num_workers=", kCheckWorkers),
        std::string("--replicas=2"), std::string("--join_timeout_s=30"),
        std::string("--heartbeat_interval_ms=200"),
        absl::StrCat("--heartbeat_timeout_s=", kHeartbeatTimeoutS)}) {
    argv.push_back(std::move(a));
  }
  for (const std::string& f : HostFlags(place.host)) argv.push_back(f);
  PETREL_ASSIGN_OR_RETURN(round->recovered_scheduler, StartProgram(argv));
  if (!WaitForText(round->recovered_scheduler.get(), "recovered the job",
                   kTimeout)) {
    return round->Failed("the --recover scheduler did not recover the job");
  }
  return absl::OkStatus();
}

// Injects `fault` into the running job; `victim` is the process hit (or
// none) and `code` the exit it must end with.
absl::Status Inject(const FaultRoundOptions& options, Fault fault,
                    std::mt19937_64& rng, Round* round, Subprocess** victim,
                    int* code) {
  DaemonCluster& c = *round->cluster;
  Subprocess* sched = c.scheduler();
  const int server = std::uniform_int_distribution<int>(0, 2)(rng);
  *victim = nullptr;
  *code = 0;
  switch (fault) {
    case Fault::kServerKill:
      *victim = round->servers[server];
      *code = 128 + SIGKILL;
      (*victim)->Signal(SIGKILL);
      return absl::OkStatus();
    case Fault::kServerStop:
      *victim = round->servers[server];
      *code = kExitOutOfJob;
      (*victim)->Signal(SIGSTOP);
      if (!WaitForText(sched, "fail over to", absl::Seconds(30))) {
        (*victim)->Signal(SIGCONT);
        return round->Failed("a stopped server's ranges did not fail over");
      }
      (*victim)->Signal(SIGCONT);
      return absl::OkStatus();
    case Fault::kServerPause:
      *victim = round->servers[server];
      *code = kStaysOrFenced;
      (*victim)->Signal(SIGSTOP);
      absl::SleepFor(kBrief);  // the fault's length
      (*victim)->Signal(SIGCONT);
      return absl::OkStatus();
    case Fault::kSchedulerRestart:
      return RestartScheduler(options, round);
    case Fault::kServerCut:
      *victim = round->servers[server];
      *code = kExitOutOfJob;
      PETREL_RETURN_IF_ERROR(round->lab->Cut(0, 1 + server));
      if (!WaitForText(sched, "fail over to", absl::Seconds(30))) {
        return round->Failed("a cut-off server's ranges did not fail over");
      }
      return round->lab->Heal();
    case Fault::kServerBlip:
      *victim = round->servers[server];
      *code = kStaysOrFenced;
      PETREL_RETURN_IF_ERROR(round->lab->Cut(0, 1 + server));
      absl::SleepFor(kBrief);  // the fault's length
      return round->lab->Heal();
    case Fault::kWorkerBlip: {
      const int worker = std::uniform_int_distribution<int>(0, 1)(rng);
      PETREL_RETURN_IF_ERROR(round->lab->Isolate(4 + worker));
      absl::SleepFor(kBrief);  // the fault's length
      return round->lab->Heal();
    }
    case Fault::kWorkerKill: {
      const int rank =
          std::uniform_int_distribution<int>(0, kTrainWorkers - 1)(rng);
      *victim = round->workers[rank];
      *code = 128 + SIGKILL;
      if (!(*victim)
               ->WaitForLine(absl::StrCat("progress worker=", rank), kTimeout)
               .ok()) {
        return round->Failed("the worker to kill reported no progress");
      }
      (*victim)->Signal(SIGKILL);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("unknown fault");
}

absl::Status ExpectExit(const Round& round, Subprocess* p, int want,
                        const std::string& what) {
  absl::StatusOr<int> code = p->Wait(kTimeout);
  if (!code.ok()) return round.Failed(absl::StrCat(what, " did not exit"));
  if (*code != want &&
      !(want == kStaysOrFenced && (*code == 0 || *code == kExitOutOfJob))) {
    return round.Failed(
        absl::StrCat(what, " exited ", *code, " (expected ", want, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

const char* FaultName(Fault fault) {
  switch (fault) {
    case Fault::kServerKill:
      return "server-kill";
    case Fault::kServerStop:
      return "server-stop";
    case Fault::kServerPause:
      return "server-pause";
    case Fault::kSchedulerRestart:
      return "scheduler-restart";
    case Fault::kServerCut:
      return "server-cut";
    case Fault::kServerBlip:
      return "server-blip";
    case Fault::kWorkerBlip:
      return "worker-blip";
    case Fault::kWorkerKill:
      return "worker-kill";
  }
  return "?";
}

std::vector<Fault> PickableFaults(bool partitions) {
  std::vector<Fault> faults = {Fault::kServerKill, Fault::kServerStop,
                               Fault::kServerPause, Fault::kSchedulerRestart,
                               Fault::kWorkerKill};
  if (partitions) {
    faults.insert(faults.end(),
                  {Fault::kServerCut, Fault::kServerBlip, Fault::kWorkerBlip});
  }
  return faults;
}

absl::StatusOr<FaultRoundResult> RunFaultRound(const FaultRoundOptions& options,
                                               Fault fault,
                                               std::mt19937_64& rng) {
  const absl::Time start = absl::Now();
  const bool training = fault == Fault::kWorkerKill;
  Round round;
  absl::Status started = StartJob(options, fault, &round);
  if (!started.ok()) {
    return round.Failed(
        absl::StrCat("the job did not start: ", started.message()));
  }
  // A check job's fault lands anywhere in its first second of pushing (a
  // training worker is killed after its first progress report).
  if (!training) {
    absl::SleepFor(absl::Milliseconds(
        std::uniform_int_distribution<int>(0, 1000)(rng)));  // random timing
  }
  for (Subprocess* w : round.workers) {
    if (w->Wait(absl::ZeroDuration()).ok()) {
      return round.Failed("the job ended before the fault");
    }
  }
  Subprocess* victim = nullptr;
  int victim_code = 0;
  PETREL_RETURN_IF_ERROR(
      Inject(options, fault, rng, &round, &victim, &victim_code));
  for (Subprocess* w : round.workers) {
    if (w == victim) continue;
    PETREL_RETURN_IF_ERROR(ExpectExit(round, w, 0, "a worker"));
    if (!training && !absl::StrContains(w->Output(), "ok=true")) {
      return round.Failed("a check worker's sums were not exact");
    }
  }
  if (victim != nullptr) {
    PETREL_RETURN_IF_ERROR(
        ExpectExit(round, victim, victim_code, "the process hit"));
  }
  for (Subprocess* s : round.servers) {
    if (s != victim)
      PETREL_RETURN_IF_ERROR(ExpectExit(round, s, 0, "a server"));
  }
  Subprocess* sched = round.recovered_scheduler != nullptr
                          ? round.recovered_scheduler.get()
                          : round.cluster->scheduler();
  PETREL_RETURN_IF_ERROR(ExpectExit(round, sched, 0, "the scheduler"));
  FaultRoundResult result;
  result.fault = fault;
  if (training) {
    std::string out;
    for (Subprocess* w : round.workers) out += w->Output();
    const double examples =
        ValueAfter(out, "final test_logloss", "train_examples");
    if (examples != static_cast<double>(kEpochs) * options.train_examples) {
      return round.Failed(absl::StrCat("the job counted ", examples,
                                       " training examples, not ",
                                       kEpochs * options.train_examples));
    }
    result.trained_examples = static_cast<int64_t>(examples);
  } else {
    result.verified_updates =
        static_cast<int64_t>(CheckRounds(fault)) * kKeys * kCheckWorkers;
  }
  result.length = absl::Now() - start;
  return result;
}

}  // namespace petrel

// minimal_worker: a worker program built outside Petrel's source tree
// against an installed Petrel (find_package(Petrel) or pkg-config petrel).
// It joins a running job (petrel-scheduler and petrel-server), pushes a
// few values twice, pulls them back and checks that the servers summed
// them. Each worker uses keys of its own (offset by its rank), so several
// can run in one job.
//
//   minimal_worker --scheduler=HOST:PORT --num_servers=1 --num_workers=1
//
// Exits 0 when the pulled values are right, 1 when they are not or the
// job failed, 2 for bad flags.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/build_info.h"
#include "base/cli.h"
#include "kv/kv_worker.h"
#include "node/node_flags.h"
#include "node/node_runtime.h"

namespace {

constexpr int kNumKeys = 5;

absl::Status PushTwiceAndPull(petrel::Postoffice* postoffice) {
  petrel::KVWorker<float> kv(/*app_id=*/0, /*customer_id=*/0, postoffice);
  absl::Status status = kv.Start();
  if (!status.ok()) return status;
  const uint64_t base = uint64_t{1000} * (postoffice->my_rank() + 1);
  petrel::SArray<uint64_t> keys(kNumKeys);
  petrel::SArray<float> values(kNumKeys);
  for (int i = 0; i < kNumKeys; ++i) {
    keys[i] = base + static_cast<uint64_t>(i) * 7919;  // spread over servers
    values[i] = 0.5f * static_cast<float>(i + 1);
  }
  for (int round = 0; round < 2; ++round) {
    status = kv.Wait(kv.Push(keys, values), absl::Seconds(30));
    if (!status.ok()) return status;
  }
  petrel::SArray<float> pulled;
  status = kv.Wait(kv.Pull(keys, &pulled), absl::Seconds(30));
  if (!status.ok()) return status;
  if (pulled.size() != keys.size()) {
    return absl::InternalError("pulled the wrong number of values");
  }
  for (int i = 0; i < kNumKeys; ++i) {
    if (pulled[i] != 2 * values[i]) {
      return absl::InternalError("key " + std::to_string(keys[i]) +
                                 ": pulled " + std::to_string(pulled[i]) +
                                 ", expected " + std::to_string(2 * values[i]));
    }
  }
  std::printf(
      "minimal_worker rank=%d: pushed twice, pulled %d values, sums "
      "right\n",
      postoffice->my_rank(), kNumKeys);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "minimal_worker";
  cli.usage =
      "a worker that pushes twice and pulls, checking the sums.\n"
      "  minimal_worker --scheduler=HOST:PORT [--num_servers=N "
      "--num_workers=M]";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  std::printf("%s\n", petrel::VersionLine("minimal_worker").c_str());

  absl::StatusOr<petrel::NodeSettings> settings =
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_WORKER);
  if (!settings.ok()) {
    std::fprintf(stderr, "minimal_worker: %s\n",
                 settings.status().ToString().c_str());
    return 2;
  }
  petrel::NodeRuntime runtime(*settings);
  absl::Status status = runtime.Start();  // joins the job
  if (status.ok()) status = PushTwiceAndPull(runtime.postoffice());
  // Finish tells the scheduler this worker is done, also after a failure,
  // so that the job ends.
  const absl::Status finished = runtime.postoffice()->Finish(absl::Seconds(60));
  if (status.ok()) status = finished;
  runtime.Stop();
  if (!status.ok()) {
    std::fprintf(stderr, "minimal_worker: %s\n", status.ToString().c_str());
    return petrel::ExitCodeFor(status);
  }
  return 0;
}

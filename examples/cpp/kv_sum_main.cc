// petrel-example-kv-sum: a worker program written as PS-Lite programs are,
// one binary for every role. Started with DMLC_ROLE=scheduler or server it
// runs Petrel's built-in scheduler or server (RunBuiltInRole) and exits when
// the job ends; as a worker it pushes (rank + 1) to keys 0..num_keys-1
// --rounds times, waits for the other workers and pulls every key, which
// must hold exactly rounds * W * (W + 1) / 2.
//
//   export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9000
//   export DMLC_NUM_SERVER=2 DMLC_NUM_WORKER=2
//   DMLC_ROLE=scheduler petrel-example-kv-sum &
//   DMLC_ROLE=server petrel-example-kv-sum &     # twice
//   DMLC_ROLE=worker petrel-example-kv-sum       # twice
//
// A worker prints "kv-sum rank=R keys=N sum=S ok=true". Exit codes: 0 the
// job passed, 1 a wrong sum or a runtime failure, 2 bad flags.
#include <cstdint>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "base/status_macros.h"
#include "kv/kv_worker.h"
#include "node/node_flags.h"
#include "node/node_runtime.h"
#include "roles/built_in_roles.h"

DEFINE_int32(num_keys, 1000, "Keys 0..num_keys-1 (1..1000000). Default 1000.");
DEFINE_int32(rounds, 5, "Pushes of every key (1..1000). Default 5.");

namespace {

// The worker: join, push, meet the other workers, pull and check.
absl::Status RunWorker() {
  PETREL_ASSIGN_OR_RETURN(
      petrel::NodeSettings settings,
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_WORKER));
  petrel::NodeRuntime runtime(settings);
  petrel::Postoffice* po = runtime.postoffice();
  petrel::KVWorker<float> kv(/*app_id=*/0, /*customer_id=*/0, po);
  PETREL_RETURN_IF_ERROR(kv.Start());
  PETREL_RETURN_IF_ERROR(runtime.Start());  // joins the cluster
  const absl::Duration timeout = absl::Seconds(60);
  petrel::SArray<uint64_t> keys(FLAGS_num_keys);
  for (int i = 0; i < FLAGS_num_keys; ++i) keys[i] = i;
  petrel::SArray<float> ones(FLAGS_num_keys, po->my_rank() + 1.0f);
  for (int r = 0; r < FLAGS_rounds; ++r) {
    PETREL_RETURN_IF_ERROR(kv.Wait(kv.Push(keys, ones), timeout));
  }
  PETREL_RETURN_IF_ERROR(po->Barrier(petrel::kWorkerGroup, timeout));
  petrel::SArray<float> sums;
  PETREL_RETURN_IF_ERROR(kv.Wait(kv.Pull(keys, &sums), timeout));
  const int w = po->num_workers();
  const float want = FLAGS_rounds * w * (w + 1) / 2.0f;
  for (int i = 0; i < FLAGS_num_keys; ++i) {
    if (sums[i] != want) {
      return absl::InternalError(
          absl::StrCat("key ", i, " holds ", sums[i], ", not ", want));
    }
  }
  std::printf("kv-sum rank=%d keys=%d sum=%g ok=true\n", po->my_rank(),
              FLAGS_num_keys, want);
  std::fflush(stdout);
  return po->Finish(timeout);
}

}  // namespace

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-example-kv-sum";
  cli.usage = "a push/pull worker program that runs in every role (DMLC_ROLE).";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  // The scheduler or a server: runs here until the job ends.
  if (std::optional<int> code = petrel::RunBuiltInRole(cli.name)) return *code;
  absl::Status s =
      petrel::CheckFlagRange("num_keys", FLAGS_num_keys, 1, 1000000);
  if (s.ok()) s = petrel::CheckFlagRange("rounds", FLAGS_rounds, 1, 1000);
  if (s.ok()) s = RunWorker();
  if (s.ok()) return 0;
  std::fprintf(stderr, "%s: %s\n", cli.name.c_str(),
               std::string(s.message()).c_str());
  return petrel::ExitCodeFor(s);
}

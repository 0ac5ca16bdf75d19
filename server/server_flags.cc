#include "server/server_flags.h"

#include "gflags/gflags.h"

#include "base/flag_check.h"
#include "base/status_macros.h"
#include "job/job_flags.h"

DEFINE_string(store_mode, "sum",
              "What a push does to stored values: sum (add) or assign "
              "(overwrite). Default sum. Ignored with --config.");
DEFINE_int32(server_threads, 0,
             "Threads applying large requests to the tables, or walking "
             "large pulls of the plain key-value store (0..1024); 0 = one "
             "per core. Default 0.");

DEFINE_double(memory_cap_mib, -1,
              "Overrides the job config's server.memory_cap_mib: this "
              "server keeps all its tables within this many MiB, least "
              "recently used rows evicted first (docs/memory.md; --config "
              "only). 0: no cap. Default -1: the config's.");

namespace petrel {

absl::StatusOr<ServerDaemonOptions> ServerDaemonOptionsFromFlags() {
  if (FLAGS_store_mode != "sum" && FLAGS_store_mode != "assign") {
    return absl::InvalidArgumentError("--store_mode: must be sum or assign");
  }
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("server_threads", FLAGS_server_threads, 0, 1024));
  ServerDaemonOptions o;
  o.config_path = FLAGS_config;
  o.checkpoint_dir = FLAGS_checkpoint_dir;
  o.restore_from = FLAGS_restore_from;
  o.sum = FLAGS_store_mode == "sum";
  o.server_threads = FLAGS_server_threads;
  if (FLAGS_memory_cap_mib != -1) {
    if (!(FLAGS_memory_cap_mib >= 0 && FLAGS_memory_cap_mib <= 1e12)) {
      return absl::InvalidArgumentError(
          "--memory_cap_mib: must be in 0..10^12 (or -1: the config's)");
    }
    o.memory_cap_mib = FLAGS_memory_cap_mib;
  }
  return o;
}

absl::StatusOr<std::unique_ptr<NodeDaemon>> ServerDaemonFromFlags() {
  PETREL_ASSIGN_OR_RETURN(ServerDaemonOptions o,
                          ServerDaemonOptionsFromFlags());
  return NewServerDaemon(o);
}

}  // namespace petrel

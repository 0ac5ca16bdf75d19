// petrel-server: holds a share of the job's key-value parameters and
// answers pushes and pulls until the scheduler ends the job.
//
//   petrel-server --scheduler=HOST:PORT [--port=0] [--store_mode=sum]
//   petrel-server --scheduler=HOST:PORT --config=job.textproto
//
// Without --config it is a plain key-value store (KVStoreHandler): float
// values on app 0, double, int32 and int64 values on apps of their own
// (kv/kv_typed_stores.h); with it, it serves the job's float tables with
// their optimizers and bounded delay (TableServer), and refuses values of
// other types. The job's num_servers/num_workers are the defaults of
// --num_servers/--num_workers (DMLC_* variables and the flags win).
//
// Checkpoints (with --config): the scheduler's kSave writes this server's
// table files (job/checkpoint_protocol.h). --restore_from (or
// checkpoint.restore_from / warm_start_from) loads a checkpoint's rows
// that this server owns under the new key-range map before it serves,
// then meets the workers at a barrier. SIGTERM/SIGINT asks the scheduler
// to stop the job (after a checkpoint when there is a directory).
//
// Exit codes: 0 the job finished, 1 runtime failure, 2 bad flags or
// configuration.
#include "node/daemon_main.h"
#include "server/server_flags.h"

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-server";
  info.role = petrel::pb::ROLE_SERVER;
  info.usage =
      "serves a share of a Petrel job's parameters.\n"
      "  petrel-server --scheduler=HOST:PORT [--port=0] "
      "[--config=job.textproto]";
  info.make_daemon = &petrel::ServerDaemonFromFlags;
  return petrel::RunNodeDaemon(argc, argv, info);
}

// The server's flags (--store_mode, --server_threads, --memory_cap_mib) and
// the built-in server daemon they configure. Part of the flags module of the
// binaries that can run a server (petrel-server, and node programs started with
// DMLC_ROLE=server): linked into executables only.
#ifndef PETREL_SERVER_SERVER_FLAGS_H_
#define PETREL_SERVER_SERVER_FLAGS_H_

#include <memory>

#include "absl/status/statusor.h"

#include "server/server_daemon.h"

namespace petrel {

// The options from the flags (with job/job_flags.h's --config,
// --checkpoint_dir, --restore_from); InvalidArgument naming a bad flag.
absl::StatusOr<ServerDaemonOptions> ServerDaemonOptionsFromFlags();

// NewServerDaemon(ServerDaemonOptionsFromFlags()).
absl::StatusOr<std::unique_ptr<NodeDaemon>> ServerDaemonFromFlags();

}  // namespace petrel

#endif  // PETREL_SERVER_SERVER_FLAGS_H_

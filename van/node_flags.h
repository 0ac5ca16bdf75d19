// Command-line flags shared by every Petrel node binary (petrel-scheduler,
// petrel-server, petrel-worker, petrel-bench and user programs built on
// them). This file and node_flags.cc form the flags module of those
// binaries; they are linked into binaries only, never into a library.
#ifndef PETREL_VAN_NODE_FLAGS_H_
#define PETREL_VAN_NODE_FLAGS_H_

#include "absl/status/statusor.h"

#include "proto/meta.pb.h"
#include "van/node_runtime.h"

namespace petrel {

// Builds a node's settings in layers: defaults, then PS-Lite's DMLC_*
// environment variables, then flags given on the command line (a flag
// always wins). `role` is the binary's role; DMLC_ROLE must agree with it
// when set. InvalidArgument names the flag or variable and its value.
absl::StatusOr<NodeSettings> NodeSettingsFromFlags(pb::Role role);

// Parses a node binary's command line with gflags (set the usage message
// first). Returns -1 when main should go on; otherwise the exit code main
// should return: 0 after --help printed the usage (gflags itself would exit
// 1), 2 after one line on stderr naming an unknown flag or a stray
// argument (gflags itself would exit 1).
int ParseNodeCommandLine(int* argc, char*** argv);

}  // namespace petrel

#endif  // PETREL_VAN_NODE_FLAGS_H_

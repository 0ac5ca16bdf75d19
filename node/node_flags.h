// Command-line flags shared by every Petrel node binary (petrel-scheduler,
// petrel-server, petrel-worker, petrel-bench and user programs built on
// them). This file and node_flags.cc form the flags module of those
// binaries; they are linked into binaries only, never into a library.
#ifndef PETREL_NODE_NODE_FLAGS_H_
#define PETREL_NODE_NODE_FLAGS_H_

#include "absl/status/statusor.h"

#include "node/node_daemon.h"
#include "node/node_runtime.h"
#include "proto/meta.pb.h"

namespace petrel {

// Builds a node's settings in layers: defaults, then `config` (a job
// config's cluster sizes), then PS-Lite's DMLC_* environment variables,
// then flags given on the command line (a flag always wins). `role` is the
// node's role; DMLC_ROLE must agree with it when set. A scheduler host that
// does not resolve is an error here, not a join timeout. InvalidArgument
// names the flag or variable and its value.
absl::StatusOr<NodeSettings> NodeSettingsFromFlags(
    pb::Role role, const ClusterDefaults& config = {});

}  // namespace petrel

#endif  // PETREL_NODE_NODE_FLAGS_H_

// The built-in server as a NodeDaemon (node/node_daemon.h): holds a share of
// the job's parameters and answers pushes and pulls until the scheduler
// ends the job. Without a job config it is a plain key-value store (float
// values on app 0, double, int32 and int64 values on apps of their own);
// with one it serves the job's tables with their optimizers and bounded
// delay (TableServer), saves and loads checkpoints and writes its model
// share at the end. petrel-server runs it, and so does any node program
// started with DMLC_ROLE=server (roles/built_in_roles.h).
//
// Thread safety: as NodeDaemon.
#ifndef PETREL_SERVER_SERVER_DAEMON_H_
#define PETREL_SERVER_SERVER_DAEMON_H_

#include <memory>
#include <string>

#include "node/node_daemon.h"

namespace petrel {

struct ServerDaemonOptions {
  // The job config file (protobuf text format); empty: a plain key-value
  // store. Default empty.
  std::string config_path;
  // Override checkpoint.dir / checkpoint.restore_from; need config_path.
  // Default empty.
  std::string checkpoint_dir;
  std::string restore_from;
  // Without a config: a push adds to the stored values (true) or replaces
  // them. Default true.
  bool sum = true;
  // With a config: threads applying large requests; 0 = one per core.
  // Default 0.
  int server_threads = 0;
  // With a config: overrides server.memory_cap_mib (the cap over all the
  // tables of this server, docs/memory.md); negative: keep the config's.
  // Default -1.
  double memory_cap_mib = -1;
};

std::unique_ptr<NodeDaemon> NewServerDaemon(const ServerDaemonOptions& options);

}  // namespace petrel

#endif  // PETREL_SERVER_SERVER_DAEMON_H_

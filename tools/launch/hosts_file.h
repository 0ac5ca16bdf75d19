// The hosts file of `petrel-launch --hosts=FILE` and where the job's
// processes go on those hosts.
//
// Format: one host per line; `#` starts a comment; blank lines are ignored.
//   HOST [slots=N] [roles=scheduler,server,worker]
// HOST is what ssh connects to ([user@]name or address); the part after
// '@' is the address the processes there advertise. slots caps the servers
// plus workers on the host (default: no cap; the scheduler takes no slot);
// roles limits which processes it may run (default: all three).
//
// Thread-safe (pure functions).
#ifndef PETREL_TOOLS_LAUNCH_HOSTS_FILE_H_
#define PETREL_TOOLS_LAUNCH_HOSTS_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

struct HostEntry {
  std::string target;   // "user@node1" or "10.0.0.5": what ssh connects to
  std::string address;  // the target without "user@"
  int slots = 0;        // 0: no cap
  bool scheduler = true;
  bool server = true;
  bool worker = true;
};

// Parses the text of a hosts file; `file_name` only names it in errors.
// InvalidArgument naming FILE:LINE for an unknown key or role, a bad slot
// count, or a host given twice; and for a file with no host.
absl::StatusOr<std::vector<HostEntry>> ParseHostsFile(
    absl::string_view text, absl::string_view file_name);

// Reads and parses `path`; NotFound when it cannot be read.
absl::StatusOr<std::vector<HostEntry>> ReadHostsFile(const std::string& path);

// Where each process runs: indices into the hosts vector.
struct Placement {
  size_t scheduler = 0;
  std::vector<size_t> servers;
  std::vector<size_t> workers;
};

// The scheduler on the first host that may run it; servers, then workers,
// spread round-robin over the hosts that may run them, skipping full hosts.
// InvalidArgument when a role has no host or the slots run out.
absl::StatusOr<Placement> PlaceProcesses(const std::vector<HostEntry>& hosts,
                                         int num_servers, int num_workers);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_HOSTS_FILE_H_

// ExpandSlurmNodeList: Slurm's compressed host list ("node[01-03,07],gpu5")
// as the list of host names, in order, the way `scontrol show hostnames`
// prints it, without needing scontrol.
//
// Thread-safe (a pure function).
#ifndef PETREL_TOOLS_LAUNCH_SLURM_NODELIST_H_
#define PETREL_TOOLS_LAUNCH_SLURM_NODELIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

// Expands a host list: comma-separated items, each a name with any number
// of bracket groups of comma-separated numbers or ranges LO-HI, which keep
// LO's zero padding ("n[08-10]" -> n08 n09 n10; "r[1-2]n[1-2]" -> r1n1 r1n2
// r2n1 r2n2). InvalidArgument quoting `list` for an empty list, an
// unbalanced bracket, a bad range, or more than 1,000,000 hosts.
absl::StatusOr<std::vector<std::string>> ExpandSlurmNodeList(
    absl::string_view list);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_SLURM_NODELIST_H_

// PS-Lite compatibility: how a PS-Lite call that cannot return an error
// ends the program. PS-Lite's API returns nothing from Start, Wait or
// Finalize, so a failure there (the cluster did not form, a server died,
// the job failed) is printed with its reason and ends the process with
// petrel::ExitCodeFor's code (2 for a bad setting, 1 otherwise), without
// running static destructors while the node's threads still run.
//
// Thread safety: thread-safe.
#ifndef PETREL_PSLITE_FATAL_H_
#define PETREL_PSLITE_FATAL_H_

#include <string_view>

#include "absl/status/status.h"

namespace petrel {
namespace pslite {

[[noreturn]] void Die(const absl::Status& status, std::string_view what);

inline void DieUnlessOk(const absl::Status& status, std::string_view what) {
  if (!status.ok()) Die(status, what);
}

}  // namespace pslite
}  // namespace petrel

#endif  // PETREL_PSLITE_FATAL_H_

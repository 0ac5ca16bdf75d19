// Status propagation helpers. Abseil 20220623 has no ABSL_RETURN_IF_ERROR /
// ABSL_ASSIGN_OR_RETURN; these have the same meaning so that moving to the
// abseil ones later is a rename.
#ifndef PETREL_BASE_STATUS_MACROS_H_
#define PETREL_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#define PETREL_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status petrel_status_ = (expr);          \
    if (!petrel_status_.ok()) return petrel_status_; \
  } while (0)

#define PETREL_STATUS_CONCAT_INNER_(a, b) a##b
#define PETREL_STATUS_CONCAT_(a, b) PETREL_STATUS_CONCAT_INNER_(a, b)

#define PETREL_ASSIGN_OR_RETURN(lhs, expr) \
  PETREL_ASSIGN_OR_RETURN_IMPL_(           \
      PETREL_STATUS_CONCAT_(petrel_statusor_, __LINE__), lhs, expr)

#define PETREL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace petrel {

// Returns `status` with `context` prepended to its message ("context: msg").
// An OK status is returned unchanged.
inline absl::Status Annotate(const absl::Status& status,
                             absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(context, ": ", status.message()));
}

}  // namespace petrel

#endif  // PETREL_BASE_STATUS_MACROS_H_

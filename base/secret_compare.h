// Comparison of secrets (auth tokens) in time that depends only on their
// lengths, not on where they differ, so that a stranger cannot find a token
// byte by byte from how long refusals take.
//
// Thread safety: a pure function.
#ifndef PETREL_BASE_SECRET_COMPARE_H_
#define PETREL_BASE_SECRET_COMPARE_H_

#include "absl/strings/string_view.h"

namespace petrel {

// Whether `given` equals `expected`. Its running time depends on
// given.size() only (a wrong length is found out without a shortcut).
bool SecretsEqual(absl::string_view given, absl::string_view expected);

}  // namespace petrel

#endif  // PETREL_BASE_SECRET_COMPARE_H_

// Number parsing and error-text helpers shared by the text line parsers.
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_DATA_INTERNAL_PARSE_UTIL_H_
#define PETREL_WORKER_DATA_INTERNAL_PARSE_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace petrel {
namespace internal {

// Parses all of `text` as a finite float, allowing a leading '+'. Values
// beyond float range fail; tiny ones round towards 0.
bool ParseFloat(absl::string_view text, float* value);

enum class IntParse { kOk, kInvalid, kOverflow };
// Parses all of `text` as a decimal integer (a leading '+' is allowed for
// the signed one).
IntParse ParseUint64(absl::string_view text, uint64_t* value);
IntParse ParseInt64(absl::string_view text, int64_t* value);

// Parses a binary label: 0, 1 or -1 (-1 means 0), in any float spelling.
// InvalidArgument otherwise.
absl::Status ParseLabel(absl::string_view text, float* label);

// `text` quoted and C-escaped for an error message, cut to 40 bytes.
std::string Quote(absl::string_view text);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_WORKER_DATA_INTERNAL_PARSE_UTIL_H_

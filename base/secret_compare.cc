#include "base/secret_compare.h"

#include <cstddef>

namespace petrel {

bool SecretsEqual(absl::string_view given, absl::string_view expected) {
  // Every byte of `given` is looked at, against `expected` cycled over, so
  // the loop does the same work whether or not the lengths match.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    const unsigned char e =
        expected.empty()
            ? 0
            : static_cast<unsigned char>(expected[i % expected.size()]);
    diff |= static_cast<unsigned char>(given[i]) ^ e;
  }
  return diff == 0;
}

}  // namespace petrel

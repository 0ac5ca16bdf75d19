// Checksum64: a fast 64-bit checksum of a byte range (the XXH64 algorithm,
// so values can be checked with any xxHash implementation), for detecting
// corrupted or truncated files. It is not cryptographic: it catches
// accidents (bit flips, torn writes), not an adversary.
//
// Thread-safe (a pure function). Runs at several GB/s on one core.
#ifndef PETREL_BASE_CHECKSUM_H_
#define PETREL_BASE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace petrel {

// XXH64 of `size` bytes at `data` with `seed`. Same value on every
// platform (bytes are read as little-endian words).
uint64_t Checksum64(const void* data, size_t size, uint64_t seed = 0);

inline uint64_t Checksum64(absl::string_view bytes, uint64_t seed = 0) {
  return Checksum64(bytes.data(), bytes.size(), seed);
}

}  // namespace petrel

#endif  // PETREL_BASE_CHECKSUM_H_

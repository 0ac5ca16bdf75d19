// Checksum64: a fast 64-bit checksum of a byte range (the XXH64 algorithm,
// so values can be checked with any xxHash implementation), for detecting
// corrupted or truncated files. It is not cryptographic: it catches
// accidents (bit flips, torn writes), not an adversary.
//
// Checksum64Stream computes the same value over bytes given in pieces.
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

// Checksum64 of bytes given in pieces (a file written or read in buffers):
// after Update(a), Update(b), Digest() == Checksum64(a + b, seed). A value
// type; thread-compatible.
class Checksum64Stream {
 public:
  explicit Checksum64Stream(uint64_t seed = 0);
  void Update(const void* data, size_t size);
  // The checksum of everything given so far; Update may continue after.
  uint64_t Digest() const;

 private:
  uint64_t seed_;
  uint64_t v_[4];
  uint64_t total_ = 0;
  unsigned char pending_[32];  // bytes not yet folded into v_
  size_t num_pending_ = 0;
};

}  // namespace petrel

#endif  // PETREL_BASE_CHECKSUM_H_

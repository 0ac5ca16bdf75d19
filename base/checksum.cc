#include "base/checksum.h"

#include <algorithm>
#include <cstring>

#include "base/little_endian.h"

namespace petrel {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = Rotl(acc, 31);
  return acc * kPrime1;
}

uint64_t MergeRound(uint64_t acc, uint64_t value) {
  acc ^= Round(0, value);
  return acc * kPrime1 + kPrime4;
}

void InitLanes(uint64_t seed, uint64_t v[4]) {
  v[0] = seed + kPrime1 + kPrime2;
  v[1] = seed + kPrime2;
  v[2] = seed;
  v[3] = seed - kPrime1;
}

// Folds the 32-byte stripes of [p, end) into v; returns the first byte
// after the last whole stripe.
const unsigned char* Stripes(const unsigned char* p, const unsigned char* end,
                             uint64_t v[4]) {
  if (end - p < 32) return p;
  uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];
  for (const unsigned char* limit = end - 32; p <= limit; p += 32) {
    v1 = Round(v1, LoadLittleEndian64(p));
    v2 = Round(v2, LoadLittleEndian64(p + 8));
    v3 = Round(v3, LoadLittleEndian64(p + 16));
    v4 = Round(v4, LoadLittleEndian64(p + 24));
  }
  v[0] = v1;
  v[1] = v2;
  v[2] = v3;
  v[3] = v4;
  return p;
}

// The end of XXH64: `h` has taken the stripes (or the seed), then the tail
// [p, end) of fewer than 32 bytes and the total length.
uint64_t Finish(uint64_t h, uint64_t total, const unsigned char* p,
                const unsigned char* end) {
  h += total;
  for (; p + 8 <= end; p += 8) {
    h ^= Round(0, LoadLittleEndian64(p));
    h = Rotl(h, 27) * kPrime1 + kPrime4;
  }
  if (p + 4 <= end) {
    h ^= uint64_t{LoadLittleEndian32(p)} * kPrime1;
    h = Rotl(h, 23) * kPrime2 + kPrime3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= uint64_t{*p} * kPrime5;
    h = Rotl(h, 11) * kPrime1;
  }
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

uint64_t Converge(const uint64_t v[4]) {
  uint64_t h = Rotl(v[0], 1) + Rotl(v[1], 7) + Rotl(v[2], 12) + Rotl(v[3], 18);
  for (int i = 0; i < 4; ++i) h = MergeRound(h, v[i]);
  return h;
}

}  // namespace

uint64_t Checksum64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  if (size < 32) return Finish(seed + kPrime5, size, p, end);
  uint64_t v[4];
  InitLanes(seed, v);
  p = Stripes(p, end, v);
  return Finish(Converge(v), size, p, end);
}

Checksum64Stream::Checksum64Stream(uint64_t seed) : seed_(seed) {
  InitLanes(seed, v_);
}

void Checksum64Stream::Update(const void* data, size_t size) {
  if (size == 0) return;
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  total_ += size;
  if (num_pending_ > 0) {
    const size_t take = std::min(size, sizeof(pending_) - num_pending_);
    std::memcpy(pending_ + num_pending_, p, take);
    num_pending_ += take;
    p += take;
    if (num_pending_ < sizeof(pending_)) return;
    Stripes(pending_, pending_ + sizeof(pending_), v_);
    num_pending_ = 0;
  }
  p = Stripes(p, end, v_);
  num_pending_ = static_cast<size_t>(end - p);
  std::memcpy(pending_, p, num_pending_);
}

uint64_t Checksum64Stream::Digest() const {
  const uint64_t h = total_ >= 32 ? Converge(v_) : seed_ + kPrime5;
  return Finish(h, total_, pending_, pending_ + num_pending_);
}

}  // namespace petrel

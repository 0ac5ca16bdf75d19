#include "worker/data/feature_hash.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/little_endian.h"

namespace petrel {

uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

namespace {

constexpr uint64_t kMul1 = 0x87c37b91114253d5ULL;
constexpr uint64_t kMul2 = 0x4cf5ad432745937fULL;

// Little-endian load of n <= 8 bytes.
uint64_t Load(const unsigned char* p, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i) x |= uint64_t{p[i]} << (8 * i);
  return x;
}

uint64_t Round(uint64_t h, uint64_t block) {
  block *= kMul1;
  block = (block << 31) | (block >> 33);
  h ^= block * kMul2;
  h = (h << 27) | (h >> 37);
  return h * 5 + 0x52dce729;
}

uint64_t Seed(uint64_t field, uint64_t n) {
  return Mix64((field << 32) ^ n ^ 0x9e3779b97f4a7c15ULL);
}

// Seeds of the common (field, length) pairs, computed once (thread-safe
// static): saves one of the hash's three mixing steps per feature.
constexpr uint32_t kSeedFields = 64;
constexpr size_t kSeedLengths = 32;
const std::array<uint64_t, kSeedFields * kSeedLengths>& SeedTable() {
  static const std::array<uint64_t, kSeedFields* kSeedLengths> table = [] {
    std::array<uint64_t, kSeedFields * kSeedLengths> t;
    for (uint32_t f = 0; f < kSeedFields; ++f) {
      for (size_t n = 0; n < kSeedLengths; ++n) {
        t[f * kSeedLengths + n] = Seed(f, n);
      }
    }
    return t;
  }();
  return table;
}

}  // namespace

uint64_t HashFeature(uint32_t field, absl::string_view value) {
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  size_t n = value.size();
  uint64_t h = field < kSeedFields && n < kSeedLengths
                   ? SeedTable()[field * kSeedLengths + n]
                   : Seed(field, n);
  for (; n >= 8; p += 8, n -= 8) h = Round(h, LoadLittleEndian64(p));
  if (n > 0) h = Round(h, Load(p, n));
  return Mix64(h);
}

namespace {

int64_t ComputeBucket(int64_t value) {
  if (value <= 2) return value;
  const double l = std::log(static_cast<double>(value));
  return static_cast<int64_t>(std::floor(l * l));
}

// Buckets of the common small values, computed once (thread-safe static).
constexpr int kBucketTableSize = 4096;
const std::array<int32_t, kBucketTableSize>& BucketTable() {
  static const std::array<int32_t, kBucketTableSize> table = [] {
    std::array<int32_t, kBucketTableSize> t;
    for (int v = 0; v < kBucketTableSize; ++v) {
      t[v] = static_cast<int32_t>(ComputeBucket(v));
    }
    return t;
  }();
  return table;
}

}  // namespace

int64_t CriteoIntegerBucket(int64_t value) {
  if (value >= 0 && value < kBucketTableSize) return BucketTable()[value];
  return ComputeBucket(value);
}

namespace {

uint64_t ComputeIntegerKey(uint32_t field, int64_t value) {
  char buf[32] = {'S', 'P'};
  char* begin = buf + 2;
  if (value > 2) begin = buf;
  auto result =
      std::to_chars(begin, buf + sizeof(buf), CriteoIntegerBucket(value));
  return HashFeature(field, absl::string_view(buf, result.ptr - buf));
}

// Keys of every integer field's buckets (floor(ln(v)^2) <= 1907 for any
// int64 v > 2) and of its small values -16..2, computed once (thread-safe
// static): one lookup instead of formatting and hashing per feature.
constexpr int64_t kMaxBucket = 1907;
constexpr int64_t kMinSmall = -16;
constexpr int64_t kKeysPerField = kMaxBucket + 1 + (2 - kMinSmall + 1);
const std::vector<uint64_t>& IntegerKeyTable() {
  static const std::vector<uint64_t>* table = [] {
    auto* t = new std::vector<uint64_t>(kCriteoIntegerFields * kKeysPerField);
    for (uint32_t f = 0; f < kCriteoIntegerFields; ++f) {
      uint64_t* keys = t->data() + f * kKeysPerField;
      for (int64_t b = 0; b <= kMaxBucket; ++b) {
        // The key of the values of bucket b: HashFeature(f, "<b>").
        char buf[24];
        auto result = std::to_chars(buf, buf + sizeof(buf), b);
        keys[b] = HashFeature(f, absl::string_view(buf, result.ptr - buf));
      }
      for (int64_t v = kMinSmall; v <= 2; ++v) {
        keys[kMaxBucket + 1 + (v - kMinSmall)] = ComputeIntegerKey(f, v);
      }
    }
    return t;
  }();
  return *table;
}

}  // namespace

uint64_t CriteoIntegerKey(uint32_t field, int64_t value) {
  if (field >= static_cast<uint32_t>(kCriteoIntegerFields) ||
      value < kMinSmall) {
    return ComputeIntegerKey(field, value);
  }
  const uint64_t* keys = IntegerKeyTable().data() + field * kKeysPerField;
  if (value <= 2) return keys[kMaxBucket + 1 + (value - kMinSmall)];
  const int64_t bucket = CriteoIntegerBucket(value);
  if (bucket > kMaxBucket) return ComputeIntegerKey(field, value);
  return keys[bucket];
}

}  // namespace petrel

// Feature hashing shared by the Criteo reader and petrel-datagen, so that
// generated ground-truth models are defined over exactly the keys the
// reader produces.
//
// Criteo fields are numbered 0..12 for the integer columns and 13..38 for
// the categorical columns. All functions are pure and thread-safe, and the
// hashes are the same on every platform (bytes are read explicitly).
#ifndef PETREL_WORKER_DATA_FEATURE_HASH_H_
#define PETREL_WORKER_DATA_FEATURE_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

#include "job/criteo.h"

namespace petrel {

// Field number of categorical column j (0-based) is kCriteoIntegerFields + j
// (job/criteo.h).

// 64-bit hash of (field, value): the value's bytes are read as
// little-endian 8-byte blocks and mixed MurmurHash3-style into a state
// seeded by the field and the length, then finished with the MurmurHash3
// fmix64 finalizer so that every output bit depends on every input bit.
uint64_t HashFeature(uint32_t field, absl::string_view value);

// Mixes a 64-bit integer (the MurmurHash3 fmix64 finalizer); a bijection.
uint64_t Mix64(uint64_t x);

// The customary log transform of Criteo integer features (the 2014
// competition winners'): values <= 2 keep their own bucket; larger ones go to
// floor(ln(v)^2).
int64_t CriteoIntegerBucket(int64_t value);

// Key of integer field `field` (0..12) with value `value`:
// HashFeature(field, "SP<v>") for v <= 2 and HashFeature(field, "<bucket>")
// otherwise. The "SP" prefix keeps small raw values apart from the log
// buckets (ln(3)^2 and ln(4)^2 also floor to 1), as the winners did.
uint64_t CriteoIntegerKey(uint32_t field, int64_t value);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_FEATURE_HASH_H_

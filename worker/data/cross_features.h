// Crossed features (model.crosses, job/crosses_config.h): for each listed
// pair (a, b) of fields that are both present in an example, one more
// feature of value 1 whose key is CrossKey(a, b, key of a, key of b) and
// whose field number is base_fields + the pair's index in the list. The
// crosses go after the example's own features. Where a field occurs more
// than once in an example (not in Criteo data) its first key is used.
//
// Cross keys are a 64-bit hash of (a, b, both keys) in a domain of their
// own (a seed no base feature hash uses), so they do not collide with the
// base features' keys except with hash-collision odds (2^-64 per pair of
// keys); never kBiasKey (worker/model/model.h).
//
// Thread-safe (pure functions); a CrossingReader is not (one per thread).
#ifndef PETREL_WORKER_DATA_CROSS_FEATURES_H_
#define PETREL_WORKER_DATA_CROSS_FEATURES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "job/crosses_config.h"
#include "worker/data/batch.h"
#include "worker/data/reader.h"

namespace petrel {

// The key of the cross of field a's key `key_a` and field b's `key_b`.
uint64_t CrossKey(int a, int b, uint64_t key_a, uint64_t key_b);

// Appends each example's crosses to *batch, which must carry fields
// (batch->fields.size() == nnz()). Keeps the fields (with the crosses')
// when keep_fields, else clears them. Field numbers >= base_fields of the
// batch's own features are ignored for crossing.
void AppendCrosses(const std::vector<CrossPair>& pairs, int base_fields,
                   bool keep_fields, Batch* batch);

// A Reader that reads `inner` (which must fill fields) and appends the
// crosses of `pairs` to every batch; keeps the fields when keep_fields.
std::unique_ptr<Reader> NewCrossingReader(std::unique_ptr<Reader> inner,
                                          std::vector<CrossPair> pairs,
                                          int base_fields, bool keep_fields);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CROSS_FEATURES_H_

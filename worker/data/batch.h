// The CSR batch that readers fill and trainers consume.
//
// Example i has label labels[i] (0 or 1) and features at positions
// offsets[i] .. offsets[i+1]-1 of keys/values. Keys are raw feature keys
// (libsvm indices, or hashed Criteo features), not yet deduplicated.
// offsets always has size() + 1 entries and offsets[0] == 0.
//
// Optional parts, filled only when the reader is asked for them
// (ReaderOptions::with_fields / with_numeric), so that models which do not
// use them pay nothing:
//   fields:  empty, or one field number per position (fields.size() ==
//            nnz()); for Criteo 0..12 integer columns, 13..38 categorical.
//   numeric: size() x num_numeric dense features, row-major (example i's
//            are numeric[i*num_numeric .. (i+1)*num_numeric-1]);
//            num_numeric is 0 when there are none.
//
// Thread safety: a plain value type; no internal synchronization.
#ifndef PETREL_WORKER_DATA_BATCH_H_
#define PETREL_WORKER_DATA_BATCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace petrel {

struct Batch {
  std::vector<float> labels;         // one per example, 0 or 1
  std::vector<uint64_t> keys;        // nnz feature keys
  std::vector<float> values;         // nnz feature values
  std::vector<uint32_t> offsets{0};  // examples + 1 entries
  std::vector<uint32_t> fields;      // empty or nnz field numbers
  std::vector<float> numeric;        // examples x num_numeric, row-major
  int num_numeric = 0;               // numeric features per example

  // Number of examples.
  size_t size() const { return labels.size(); }
  // Number of stored features over all examples.
  size_t nnz() const { return keys.size(); }
  // Removes every example, keeping the capacity; num_numeric becomes 0.
  void Clear() {
    labels.clear();
    keys.clear();
    values.clear();
    offsets.assign(1, 0);
    fields.clear();
    numeric.clear();
    num_numeric = 0;
  }
  // Truncates to the first `examples` examples (used to drop a half-parsed
  // example, whose fields and numeric values may be partly appended).
  // REQUIRES: examples <= size().
  void Truncate(size_t examples) {
    const size_t nnz = offsets[examples];
    labels.resize(examples);
    keys.resize(nnz);
    values.resize(nnz);
    offsets.resize(examples + 1);
    fields.resize(std::min(fields.size(), nnz));
    numeric.resize(
        std::min(numeric.size(), examples * static_cast<size_t>(num_numeric)));
  }
};

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_BATCH_H_

// The CSR batch that readers fill and trainers consume.
//
// Example i has label labels[i] (0 or 1) and features at positions
// offsets[i] .. offsets[i+1]-1 of keys/values. Keys are raw feature keys
// (libsvm indices, or hashed Criteo features), not yet deduplicated.
// offsets always has size() + 1 entries and offsets[0] == 0.
//
// Thread safety: a plain value type; no internal synchronization.
#ifndef PETREL_WORKER_BATCH_H_
#define PETREL_WORKER_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace petrel {

struct Batch {
  std::vector<float> labels;         // one per example, 0 or 1
  std::vector<uint64_t> keys;        // nnz feature keys
  std::vector<float> values;         // nnz feature values
  std::vector<uint32_t> offsets{0};  // examples + 1 entries

  // Number of examples.
  size_t size() const { return labels.size(); }
  // Number of stored features over all examples.
  size_t nnz() const { return keys.size(); }
  // Removes every example, keeping the capacity.
  void Clear() {
    labels.clear();
    keys.clear();
    values.clear();
    offsets.assign(1, 0);
  }
  // Truncates to the first `examples` examples (used to drop a half-parsed
  // example). REQUIRES: examples <= size().
  void Truncate(size_t examples) {
    labels.resize(examples);
    keys.resize(offsets[examples]);
    values.resize(offsets[examples]);
    offsets.resize(examples + 1);
  }
};

}  // namespace petrel

#endif  // PETREL_WORKER_BATCH_H_

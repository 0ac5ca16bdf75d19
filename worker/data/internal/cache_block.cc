#include "worker/data/internal/cache_block.h"

#include <cstring>

#include "absl/strings/str_cat.h"

#include "base/checksum.h"

namespace petrel {
namespace internal {
namespace {

constexpr uint32_t kValuesOne = 1;
constexpr uint32_t kHasFields = 2;
constexpr uint32_t kKeys32 = 4;

template <typename T>
void Put(const T& value, std::string* out) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
void PutArray(const T* data, size_t n, std::string* out) {
  if (n == 0) return;  // data may be null
  out->append(reinterpret_cast<const char*>(data), n * sizeof(T));
}

template <typename T>
T Get(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Appends n elements of type T at `src` to *v.
template <typename T>
void AppendColumn(const char* src, size_t n, std::vector<T>* v) {
  const size_t old = v->size();
  v->resize(old + n);
  if (n > 0) std::memcpy(v->data() + old, src, n * sizeof(T));
}

bool AllBelow2To32(const std::vector<uint64_t>& keys) {
  uint64_t any_high = 0;
  for (uint64_t key : keys) any_high |= key >> 32;
  return any_high == 0;
}

bool AllOnes(const std::vector<float>& values) {
  for (float v : values) {
    if (v != 1.0f) return false;
  }
  return true;
}

}  // namespace

void EncodeBlock(const Batch& batch, std::string* out) {
  const uint32_t n = static_cast<uint32_t>(batch.size());
  const uint32_t nnz = static_cast<uint32_t>(batch.nnz());
  const bool values_one = AllOnes(batch.values);
  const bool has_fields = !batch.fields.empty();
  const bool keys32 = AllBelow2To32(batch.keys);  // libsvm indices usually
  const uint32_t flags = (values_one ? kValuesOne : 0) |
                         (has_fields ? kHasFields : 0) | (keys32 ? kKeys32 : 0);
  const size_t start = out->size();
  // One allocation of the exact size: blocks are large, and growing them
  // step by step would copy and page-fault them several times.
  out->reserve(start + kBlockHeaderBytes + size_t{n} * 8 +
               size_t{nnz} * (keys32 ? 4 : 8) +
               (values_one ? 0 : size_t{nnz} * 4) +
               (has_fields ? size_t{nnz} * 4 : 0) + batch.numeric.size() * 4);
  Put(n, out);
  Put(nnz, out);
  Put(flags, out);
  Put(static_cast<uint32_t>(batch.num_numeric), out);
  Put(uint64_t{0}, out);  // payload bytes, set below
  Put(uint64_t{0}, out);  // checksum, set below
  PutArray(batch.labels.data(), n, out);
  PutArray(batch.offsets.data() + 1, n, out);
  if (keys32) {
    const size_t at = out->size();
    out->resize(at + size_t{nnz} * 4);
    for (uint32_t i = 0; i < nnz; ++i) {
      const uint32_t key = static_cast<uint32_t>(batch.keys[i]);
      std::memcpy(&(*out)[at + size_t{i} * 4], &key, 4);
    }
  } else {
    PutArray(batch.keys.data(), nnz, out);
  }
  if (!values_one) PutArray(batch.values.data(), nnz, out);
  if (has_fields) PutArray(batch.fields.data(), nnz, out);
  PutArray(batch.numeric.data(), batch.numeric.size(), out);
  char* header = &(*out)[start];
  const uint64_t payload = out->size() - start - kBlockHeaderBytes;
  std::memcpy(header + 16, &payload, 8);
  uint64_t sum = Checksum64(header, 24);
  sum = Checksum64(header + kBlockHeaderBytes, payload, sum);
  std::memcpy(header + 24, &sum, 8);
}

uint64_t BlockPayloadBytes(const char* header) {
  return Get<uint64_t>(header + 16);
}

absl::StatusOr<BlockView> ParseBlock(absl::string_view bytes) {
  if (bytes.size() < kBlockHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat("block of ", bytes.size(), " bytes has no header"));
  }
  const char* p = bytes.data();
  const uint64_t payload = BlockPayloadBytes(p);
  if (payload != bytes.size() - kBlockHeaderBytes) {
    return absl::DataLossError(absl::StrCat("block says ", payload,
                                            " payload bytes but has ",
                                            bytes.size() - kBlockHeaderBytes));
  }
  uint64_t sum = Checksum64(p, 24);
  sum = Checksum64(p + kBlockHeaderBytes, payload, sum);
  if (sum != Get<uint64_t>(p + 24)) {
    return absl::DataLossError("block checksum mismatch");
  }
  BlockView view;
  view.examples = Get<uint32_t>(p);
  view.nnz = Get<uint32_t>(p + 4);
  const uint32_t flags = Get<uint32_t>(p + 8);
  const uint32_t num_numeric = Get<uint32_t>(p + 12);
  view.values_one = (flags & kValuesOne) != 0;
  view.has_fields = (flags & kHasFields) != 0;
  view.keys32 = (flags & kKeys32) != 0;
  const uint64_t n = view.examples, nnz = view.nnz;
  const uint64_t key_bytes = view.keys32 ? 4 : 8;
  const uint64_t want = n * 8 + nnz * key_bytes +
                        (view.values_one ? 0 : nnz * 4) +
                        (view.has_fields ? nnz * 4 : 0) + n * num_numeric * 4;
  if (num_numeric > (1u << 20) || want != payload) {
    return absl::DataLossError(absl::StrCat("block of ", n, " examples and ",
                                            nnz, " features has ", payload,
                                            " payload bytes, expected ", want));
  }
  view.num_numeric = static_cast<int>(num_numeric);
  const char* q = p + kBlockHeaderBytes;
  view.labels = q;
  view.ends = q + n * 4;
  view.keys = view.ends + n * 4;
  q = view.keys + nnz * key_bytes;
  if (!view.values_one) {
    view.values = q;
    q += nnz * 4;
  }
  if (view.has_fields) {
    view.fields = q;
    q += nnz * 4;
  }
  view.numeric = q;
  uint32_t last = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t end = Get<uint32_t>(view.ends + i * 4);
    if (end < last || end > nnz) {
      return absl::DataLossError("block offsets out of order");
    }
    last = end;
  }
  if (last != nnz) return absl::DataLossError("block offsets do not add up");
  return view;
}

void AppendExamples(const BlockView& block, size_t begin, size_t end,
                    Batch* batch) {
  if (begin == end) return;
  const uint32_t first =
      begin == 0 ? 0 : Get<uint32_t>(block.ends + (begin - 1) * 4);
  const uint32_t last = Get<uint32_t>(block.ends + (end - 1) * 4);
  const size_t count = last - first;
  AppendColumn(block.labels + begin * 4, end - begin, &batch->labels);
  // Rebase the block's end offsets onto the batch's features.
  const uint32_t base = batch->offsets.back() - first;
  const size_t old = batch->offsets.size();
  AppendColumn(block.ends + begin * 4, end - begin, &batch->offsets);
  for (size_t i = old; i < batch->offsets.size(); ++i) {
    batch->offsets[i] += base;
  }
  if (block.keys32) {
    const size_t old_keys = batch->keys.size();
    batch->keys.resize(old_keys + count);
    uint64_t* keys = batch->keys.data() + old_keys;
    const char* src = block.keys + size_t{first} * 4;
    for (size_t i = 0; i < count; ++i) keys[i] = Get<uint32_t>(src + i * 4);
  } else {
    AppendColumn(block.keys + size_t{first} * 8, count, &batch->keys);
  }
  if (block.values_one) {
    batch->values.resize(batch->values.size() + count, 1.0f);
  } else {
    AppendColumn(block.values + size_t{first} * 4, count, &batch->values);
  }
  if (block.has_fields) {
    AppendColumn(block.fields + size_t{first} * 4, count, &batch->fields);
  }
  if (block.num_numeric > 0) {
    const size_t k = static_cast<size_t>(block.num_numeric);
    batch->num_numeric = block.num_numeric;
    AppendColumn(block.numeric + begin * k * 4, (end - begin) * k,
                 &batch->numeric);
  }
}

}  // namespace internal
}  // namespace petrel

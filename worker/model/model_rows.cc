#include "worker/model/model_rows.h"

#include <numeric>
#include <utility>

#include "base/status_macros.h"

namespace petrel {

void SendModelPulls(KVWorker<float>* kv, const std::vector<ModelTable>& tables,
                    const std::vector<uint64_t>& unique,
                    absl::Span<const uint32_t> inverse,
                    absl::Span<const uint32_t> fields, int64_t clock,
                    ModelRows* out) {
  std::vector<uint64_t> with_bias;
  with_bias.reserve(unique.size() + 1);
  with_bias.assign(unique.begin(), unique.end());
  with_bias.push_back(kBiasKey);
  SArray<Key> keys0(std::move(with_bias));
  out->keys.assign(tables.size(), SArray<Key>());
  out->rows.assign(tables.size(), SArray<float>());
  out->pulls.assign(tables.size(), 0);
  for (size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].dense_keys > 0) {
      std::vector<uint64_t> all(tables[t].dense_keys);
      std::iota(all.begin(), all.end(), uint64_t{0});
      out->keys[t] = SArray<Key>(std::move(all));
    } else if (tables[t].key_fields > 0) {
      std::vector<uint64_t> keys =
          SparseTableKeys(tables[t], unique, inverse, fields);
      if (tables[t].with_bias) keys.push_back(kBiasKey);
      out->keys[t] = SArray<Key>(std::move(keys));
    } else {
      out->keys[t] =
          tables[t].with_bias ? keys0 : keys0.Segment(0, unique.size());
    }
    KVRequestOptions opts;
    opts.table_id = tables[t].id;
    opts.clock = clock;
    out->pulls[t] = kv->Pull(out->keys[t], &out->rows[t], opts);
  }
}

absl::StatusOr<std::vector<absl::Span<const float>>> WaitModelPulls(
    KVWorker<float>* kv, ModelRows* rows, absl::Duration timeout) {
  std::vector<absl::Span<const float>> spans;
  for (size_t t = 0; t < rows->pulls.size(); ++t) {
    PETREL_RETURN_IF_ERROR(kv->Wait(rows->pulls[t], timeout));
    spans.emplace_back(rows->rows[t].data(), rows->rows[t].size());
  }
  return spans;
}

absl::StatusOr<std::vector<absl::Span<const float>>> KVRowSource::Rows(
    const std::vector<ModelTable>& tables, const std::vector<uint64_t>& unique,
    absl::Span<const uint32_t> inverse, absl::Span<const uint32_t> fields) {
  SendModelPulls(kv_, tables, unique, inverse, fields, /*clock=*/-1, &rows_);
  return WaitModelPulls(kv_, &rows_, timeout_);
}

}  // namespace petrel

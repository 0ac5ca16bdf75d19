#include "kv/replication/copy_parts.h"

namespace petrel {

template <typename Val>
std::vector<KVPairs<Val>> SplitCopy(const KVPairs<Val>& rows,
                                    int64_t max_bytes) {
  constexpr int64_t kPerKey = sizeof(Key) + sizeof(int);
  constexpr int64_t kPerVal = sizeof(Val);
  std::vector<KVPairs<Val>> parts;
  const size_t n = rows.keys.size();
  if (rows.lens.size() != n) return {rows};  // no lengths: cannot cut
  size_t key = 0;
  size_t val = 0;
  while (key < n || parts.empty()) {
    size_t end = key;
    size_t vals = 0;
    int64_t bytes = 0;
    while (end < n) {
      const int64_t len = rows.lens[end];
      const int64_t more = kPerKey + len * kPerVal;
      if (end > key && bytes + more > max_bytes) break;
      bytes += more;
      vals += static_cast<size_t>(len);
      ++end;
    }
    KVPairs<Val> part;
    part.keys = rows.keys.Segment(key, end);
    part.vals = rows.vals.Segment(val, val + vals);
    part.lens = rows.lens.Segment(key, end);
    parts.push_back(std::move(part));
    key = end;
    val += vals;
  }
  return parts;
}

template std::vector<KVPairs<float>> SplitCopy(const KVPairs<float>&, int64_t);
template std::vector<KVPairs<double>> SplitCopy(const KVPairs<double>&,
                                                int64_t);
template std::vector<KVPairs<int32_t>> SplitCopy(const KVPairs<int32_t>&,
                                                 int64_t);
template std::vector<KVPairs<int64_t>> SplitCopy(const KVPairs<int64_t>&,
                                                 int64_t);

}  // namespace petrel

// KVStore::Export: the rows a replacement server is sent (docs/failures.md,
// "Replacement servers"). Kept apart from the push and pull paths.
#include "kv/kv_store.h"
#include "kv/kv_store_internal.h"

namespace petrel {

template <typename Val>
KVPairs<Val> KVStore<Val>::Export(const std::function<bool(Key)>& keep) const {
  size_t keys = 0;
  size_t vals = 0;
  index_.ForEach([&](const RowIndex::Slot& slot) {
    if (slot.width == 0 || !keep(slot.key)) return;
    ++keys;
    vals += slot.width;
  });
  KVPairs<Val> out;
  out.keys = SArray<Key>(keys);
  out.vals = SArray<Val>(vals);
  out.lens = SArray<int>(keys);
  size_t k = 0;
  size_t v = 0;
  index_.ForEach([&](const RowIndex::Slot& slot) {
    if (slot.width == 0 || !keep(slot.key)) return;
    const Val* row = RowData(slot);
    std::copy(row, row + slot.width, out.vals.data() + v);
    out.keys[k] = slot.key;
    out.lens[k] = static_cast<int>(slot.width);
    ++k;
    v += slot.width;
  });
  return out;
}

template KVPairs<float> KVStore<float>::Export(
    const std::function<bool(Key)>&) const;
template KVPairs<double> KVStore<double>::Export(
    const std::function<bool(Key)>&) const;
template KVPairs<int32_t> KVStore<int32_t>::Export(
    const std::function<bool(Key)>&) const;
template KVPairs<int64_t> KVStore<int64_t>::Export(
    const std::function<bool(Key)>&) const;

}  // namespace petrel

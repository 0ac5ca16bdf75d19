#include "van/testing/kv_messages.h"

#include <utility>

namespace petrel {

Message WithKvData(Message base, std::vector<uint64_t> keys,
                   std::vector<float> vals) {
  base.meta.set_kv(true);
  base.meta.set_request(true);
  base.AddData(SArray<uint64_t>(std::move(keys)));
  base.AddData(SArray<float>(std::move(vals)));
  return base;
}

Message WithKeySlice(Message base, int64_t offset, int64_t total) {
  Message m = WithKvData(std::move(base), {7}, {1, 2, 3});
  m.meta.set_push(true);
  m.meta.set_value_offset(offset);
  m.meta.set_value_total(total);
  return m;
}

}  // namespace petrel

// Keys and the values that go with them, as the store holds them and the
// key-value protocol carries them (kv/kv_codec.h decodes a request's frames
// into KVPairs without copying: the arrays share the frames).
#ifndef PETREL_STORE_KV_PAIRS_H_
#define PETREL_STORE_KV_PAIRS_H_

#include <cstdint>

#include "van/buffer.h"

namespace petrel {

using Key = uint64_t;

template <typename Val>
struct KVPairs {
  SArray<Key> keys;
  SArray<Val> vals;
  SArray<int> lens;  // empty: every key has vals.size() / keys.size() values
};

}  // namespace petrel

#endif  // PETREL_STORE_KV_PAIRS_H_

// Key-value messages for the codec tests (test-only library
// petrel_van_testing): the wire codec's and kv/'s layout checks read the
// same payloads.
//
// Thread safety: pure functions.
#ifndef PETREL_VAN_TESTING_KV_MESSAGES_H_
#define PETREL_VAN_TESTING_KV_MESSAGES_H_

#include <cstdint>
#include <vector>

#include "van/message.h"

namespace petrel {

// `base` marked as a kv request, with the frames keys then values appended.
Message WithKvData(Message base, std::vector<uint64_t> keys,
                   std::vector<float> vals);

// `base` as a kv request pushing key 7 carrying values [offset, offset + 3) of
// `total`.
Message WithKeySlice(Message base, int64_t offset, int64_t total);

}  // namespace petrel

#endif  // PETREL_VAN_TESTING_KV_MESSAGES_H_

// libFuzzer target for DecodeMessage, the one decoder of bytes from peers,
// and the KV layer's check behind it (kv_codec). The input is split into a
// header frame and data frames (see fuzz_input.h) and decoded as several
// kinds of node would: the scheduler, a node without an id, a worker with a
// known peer, and a server with tight limits; a kv message the van accepts
// is then decoded by kv_codec as KVServer and KVWorker do. Nothing may
// crash, leak, hang or read out of bounds, and every accepted message must
// keep the promises handlers rely on (checked here, abort() on a broken
// one).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kv/kv_codec.h"
#include "kv/kv_slicer.h"
#include "tests/fuzz/fuzz_input.h"
#include "van/wire_codec.h"

namespace petrel {
namespace {

std::vector<DecodeContext> Contexts() {
  std::vector<DecodeContext> contexts(4);
  contexts[0].my_id = kSchedulerId;  // scheduler, sender not yet known
  contexts[0].is_scheduler = true;
  contexts[0].connection = "p0123456789abcdef";  // the seeds' joining node
  contexts[1].my_id = kEmptyNodeId;  // a node waiting for its join reply
  contexts[1].my_transport_id = "p0123456789abcdef";
  contexts[2].my_id = WorkerRankToId(0);  // worker hearing from server 0
  contexts[2].expected_sender = ServerRankToId(0);
  contexts[3].my_id = ServerRankToId(0);  // server hearing from the scheduler
  contexts[3].expected_sender = kSchedulerId;
  contexts[3].limits.max_message_bytes = 1024;
  contexts[3].limits.max_frames = 3;
  contexts[3].limits.max_meta_bytes = 256;
  contexts[3].limits.max_nodes = 4;
  return contexts;
}

void Require(bool promise) {
  if (!promise) std::abort();
}

// Reads every element of `frame` as a T, the way a handler would, after
// checking the size and alignment the decoder promises.
template <typename T>
uint64_t SumFrame(const Buffer& frame) {
  Require(frame.size() % sizeof(T) == 0);
  Require(reinterpret_cast<uintptr_t>(frame.data()) % alignof(T) == 0);
  SArray<T> a(frame);
  uint64_t sum = 0;
  for (const T& v : a) sum += static_cast<uint64_t>(v);
  return sum;
}

void InspectKv(const Message& msg, int64_t max_message_bytes);

// Checks the decoder's promises about a message it accepted in `context`.
void Inspect(const Message& msg, const DecodeContext& context) {
  Require(msg.meta.data_types_size() == static_cast<int>(msg.data.size()));
  Require(msg.data.size() <= static_cast<size_t>(context.limits.max_frames));
  Require(static_cast<int64_t>(msg.DataBytes()) <=
          context.limits.max_message_bytes);
  volatile uint64_t sink = 0;
  for (size_t i = 0; i < msg.data.size(); ++i) {
    const Buffer& f = msg.data[i];
    switch (msg.meta.data_types(static_cast<int>(i))) {
      case pb::DATA_TYPE_BYTES:
        sink = sink + SumFrame<char>(f);
        break;
      case pb::DATA_TYPE_UINT64:
        sink = sink + SumFrame<uint64_t>(f);
        break;
      case pb::DATA_TYPE_INT32:
        sink = sink + SumFrame<int32_t>(f);
        break;
      case pb::DATA_TYPE_INT64:
        sink = sink + SumFrame<int64_t>(f);
        break;
      case pb::DATA_TYPE_FLOAT:
      case pb::DATA_TYPE_DOUBLE:
        // Reading as same-sized integers: float to int conversion of NaN
        // would be UB in this check itself, not in the decoder.
        sink =
            sink + (DataTypeSize(msg.meta.data_types(static_cast<int>(i))) == 4
                        ? SumFrame<int32_t>(f)
                        : SumFrame<int64_t>(f));
        break;
      default:
        std::abort();  // the decoder let an unknown type through
    }
  }
  // What KVServer and KVWorker do with a message the van passed on.
  const int64_t max_bytes = context.limits.max_message_bytes;
  if (CheckKvLayout(msg.meta, msg.data, max_bytes).ok()) {
    Require(msg.meta.kv());
    InspectKv(msg, max_bytes);
  }
  sink = sink + static_cast<int>(DecodeKvStatus(msg.meta).code());
  if (context.my_id != kEmptyNodeId) {
    Require(msg.meta.recipient() == context.my_id);
  }
  if (context.expected_sender >= 0) {
    Require(msg.meta.sender() == context.expected_sender);
  }
  sink = sink + msg.DebugString().size();
}

// The promise of kv_codec about lens it accepted: non-negative, summing to
// the values in `vals` (elements of `type`).
void RequireLensSum(const Buffer& lens_frame, const Buffer& vals,
                    pb::DataType type) {
  SArray<int32_t> lens(lens_frame);
  uint64_t total = 0;
  for (int32_t len : lens) {
    Require(len >= 0);
    total += static_cast<uint64_t>(len);
  }
  Require(total == vals.size() / DataTypeSize(type));
}

// Checks the promises of kv_codec about a kv answer it accepted (values[,
// lens]), and reads it as KVWorker<float> would.
void InspectKvAnswer(const Message& msg, int64_t max_message_bytes) {
  Require(!msg.data.empty() && msg.data.size() <= 2);
  Require(DataTypeSize(msg.meta.data_types(0)) > 0);
  if (msg.data.size() == 2) {
    Require(msg.meta.data_types(1) == pb::DATA_TYPE_INT32);
    RequireLensSum(msg.data[1], msg.data[0], msg.meta.data_types(0));
  }
  KVPairs<float> pairs;  // an answer has no keys to decode
  Require(!DecodeKvPairs(msg, max_message_bytes, &pairs).ok());
  if (!CheckKvFrames(msg, pb::DATA_TYPE_FLOAT, max_message_bytes).ok()) return;
  // The worker checks the counts against the keys it asked: try a few.
  PulledPart part;
  part.vals = msg.data[0];
  if (msg.data.size() == 2) part.lens = SArray<int>(msg.data[1]);
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, part.lens.size()}) {
    KVSlice slice;
    slice.keys = SArray<Key>(n);
    if (!CheckPulledPart(slice, part, sizeof(float)).ok()) continue;
    Buffer out;
    SArray<int> lens;
    Require(MergePulled({slice}, {part}, n, sizeof(float), &out, &lens).ok());
    Require(lens.size() == n);
  }
}

// Checks the promises of kv_codec about a kv message it accepted, and reads
// it as KVServer<float> (a request) or KVWorker<float> (an answer) would.
void InspectKv(const Message& msg, int64_t max_message_bytes) {
  if (!msg.meta.request()) {
    InspectKvAnswer(msg, max_message_bytes);
    return;
  }
  Require(!msg.data.empty() && msg.data.size() <= 3);
  Require(msg.meta.data_types(0) == pb::DATA_TYPE_UINT64);
  if (msg.data.size() == 2) {
    size_t keys = msg.data[0].size() / 8;
    size_t vals = msg.data[1].size() / DataTypeSize(msg.meta.data_types(1));
    Require(keys == 0 ? vals == 0 : vals % keys == 0);
  }
  if (msg.data.size() == 3) {
    Require(msg.data[2].size() / 4 == msg.data[0].size() / 8);
    RequireLensSum(msg.data[2], msg.data[1], msg.meta.data_types(1));
  }
  KVPairs<float> pairs;
  if (DecodeKvPairs(msg, max_message_bytes, &pairs).ok()) {
    KVMeta kv = DecodeKvMeta(msg.meta);
    Require(kv.value_total == 0 ||
            (pairs.keys.size() == 1 && kv.value_offset >= 0 &&
             static_cast<uint64_t>(kv.value_offset) + pairs.vals.size() <=
                 static_cast<uint64_t>(kv.value_total)));
  }
}

}  // namespace
}  // namespace petrel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<petrel::DecodeContext>* const contexts =
      new std::vector<petrel::DecodeContext>(petrel::Contexts());
  petrel::FuzzInput input = petrel::ParseFuzzInput(data, size);
  for (const petrel::DecodeContext& context : *contexts) {
    absl::StatusOr<petrel::Message> msg =
        petrel::DecodeMessage(input.header, input.frames, context);
    if (msg.ok()) petrel::Inspect(*msg, context);
  }
  return 0;
}

// The wire form of the key-value protocol. A KV request or response is a van
// Message whose header (pb::Meta) carries the KV fields (push, pull, head =
// the application command, table_id, clock, key slice, min_clock, status).
// A request's data frames are keys (uint64)[, values[, lens (int32)]]; a
// pull answer's are values[, lens (int32)]: the values of the keys of the
// request it answers, in that order (the keys do not travel back; the
// worker checks the counts against what it asked). This file provides what
// a handler sees of a request (KVMeta, KVPairs), converts between KVMeta
// and pb::Meta in both directions, and checks the KV layout rules of
// docs/wire.md that the van's generic decoder (van/wire_codec.h) leaves to
// this layer. KVServer and KVWorker run these checks on every message
// before any KV code reads its frames; a message that fails them is
// dropped and counted with reason kKvRejectReason.
//
// Nothing here copies a key or value buffer: KVPairs share the frames.
//
// Thread safety: stateless functions, safe from any thread.
#ifndef PETREL_KV_KV_CODEC_H_
#define PETREL_KV_KV_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "cluster/customer.h"
#include "proto/meta.pb.h"
#include "store/kv_pairs.h"
#include "van/buffer.h"
#include "van/message.h"

namespace petrel {

// The reason label of petrel_van_messages_rejected_total for a KV message
// that failed the checks below.
inline constexpr char kKvRejectReason[] = "kv_layout";

// What a request is, as a handler sees it.
struct KVMeta {
  int cmd = 0;
  bool push = false;
  bool pull = false;
  int sender = 0;
  int timestamp = 0;
  int customer_id = 0;
  int table_id = 0;
  // Which message of the request this is, when the worker split a large
  // push into several (each a request of its own to the handler).
  int part = 0;
  // A push part with a slice of one key's values (value_total > 0): they
  // are values [value_offset, value_offset + n) of the key's value_total.
  // Handlers see these only when set_request_handler was told they take
  // them.
  int64_t value_offset = 0;
  int64_t value_total = 0;
  // Bounded delay (training jobs). A pull: the batch it is for, -1 = no
  // bound. A clock request (no keys, neither push nor pull, clock_advance):
  // the worker's new clock, -1 = the worker left the job.
  int64_t clock = -1;
  bool clock_advance = false;
  // When the server received the request (KVServer sets it; not on the
  // wire): its answer observes the time since in
  // petrel_server_request_seconds. absl::InfinitePast(): not measured.
  absl::Time received = absl::InfinitePast();

  // Where the answer to this request goes.
  ReplyAddress reply_address() const {
    return ReplyAddress{sender, customer_id, timestamp, part};
  }
};

// Writes the KV request fields of `kv` (cmd, push, pull, table_id, clock,
// clock_advance, key slice) into `meta` and marks it kv. Leaves the
// addressing fields (sender, timestamp, customer, part) to the Customer.
void EncodeKvRequest(const KVMeta& kv, pb::Meta* meta);
// The KVMeta of a request header. Call CheckKvFrames first.
KVMeta DecodeKvMeta(const pb::Meta& meta);

// Checks the KV layout of a message the van accepted: it is kv, and
// - a request (Meta.request): frames keys (uint64)[, values[, lens
//   (int32)]]; without lens the values divide evenly over the keys, with
//   lens there is one non-negative length per key and they sum to the value
//   count; a key slice (value_offset/value_total) only on a push of one
//   key, within the key, the key no larger than `max_message_bytes`;
// - a response (a pull answer): frames values[, lens (int32)], the lens
//   non-negative and summing to the value count, no key slice. Whether the
//   counts fit the keys asked is the worker's check (kv/kv_slicer.h,
//   CheckPulledPart).
// InvalidArgument naming the broken rule otherwise.
absl::Status CheckKvLayout(const pb::Meta& meta,
                           const std::vector<Buffer>& frames,
                           int64_t max_message_bytes);
// CheckKvLayout, and values (frame 1 of a request, frame 0 of a response)
// of `value_type`, if the message has them.
absl::Status CheckKvFrames(const Message& msg, pb::DataType value_type,
                           int64_t max_message_bytes);
// CheckKvFrames's second half: InvalidArgument naming both types when the
// message's values are not of `value_type`. A message that passed
// CheckKvLayout and fails only this is well-formed: KVServer answers it
// with this error rather than dropping it.
absl::Status CheckKvValueType(const Message& msg, pb::DataType value_type);
// "float32", "float64", "int32", "int64", "uint64", else "data type N".
std::string KvValueTypeName(pb::DataType type);

// Decodes the frames of a KV request into `out`, sharing its buffers.
// Returns CheckKvFrames's error, leaving `out` untouched, on a bad layout,
// and InvalidArgument for a response (it has no keys).
template <typename Val>
absl::Status DecodeKvPairs(const Message& msg, int64_t max_message_bytes,
                           KVPairs<Val>* out) {
  if (!msg.meta.request()) {
    return absl::InvalidArgumentError(
        "a kv answer has no keys to decode as KVPairs");
  }
  absl::Status valid =
      CheckKvFrames(msg, DataTypeOf<Val>::kValue, max_message_bytes);
  if (!valid.ok()) return valid;
  out->keys = SArray<Key>(msg.data[0]);
  if (msg.data.size() >= 2) out->vals = SArray<Val>(msg.data[1]);
  if (msg.data.size() >= 3) out->lens = SArray<int>(msg.data[2]);
  return absl::OkStatus();
}

// Writes the KV fields of the answer to `request` into `response`: push,
// pull, head, table_id and `min_clock`, and kv when it carries data (a
// pull's values[, lens]).
void EncodeKvResponse(const KVMeta& request, int64_t min_clock,
                      pb::Meta* response);
// As EncodeKvResponse, for an answer that carries `error` instead of data.
// REQUIRES: !error.ok().
void EncodeKvError(const KVMeta& request, const absl::Status& error,
                   pb::Meta* response);
// The status a response carries: OK, or the server's error (its code and
// message). A code that is not an absl::StatusCode reads as Internal.
absl::Status DecodeKvStatus(const pb::Meta& response);

}  // namespace petrel

#endif  // PETREL_KV_KV_CODEC_H_

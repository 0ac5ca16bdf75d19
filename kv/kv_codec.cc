#include "kv/kv_codec.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

// A push part carrying values [value_offset, value_offset + vals) of one
// key's value_total values; the whole key must fit the message limit.
absl::Status CheckKeySlice(const pb::Meta& meta, size_t keys, size_t vals,
                           int64_t max_message_bytes) {
  if (meta.value_total() == 0 && meta.value_offset() == 0) {
    return absl::OkStatus();
  }
  const int64_t offset = meta.value_offset();
  const int64_t total = meta.value_total();
  const size_t elem = meta.data_types_size() >= 2
                          ? DataTypeSize(meta.data_types(1))
                          : size_t{1};
  const uint64_t max_bytes =
      max_message_bytes > 0 ? static_cast<uint64_t>(max_message_bytes) : 0;
  if (!meta.push() || meta.pull() || keys != 1 || total <= 0 || offset < 0 ||
      static_cast<uint64_t>(offset) + vals > static_cast<uint64_t>(total) ||
      static_cast<uint64_t>(total) > max_bytes / elem) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad key slice: values ", offset, "..", offset + vals, " of ", total,
        " for ", keys, " key(s); only a push of one key may carry one"));
  }
  return absl::OkStatus();
}

// Non-negative lengths in an int32 frame (`lens_type`), summing to `vals`.
absl::Status CheckLensSum(pb::DataType lens_type, const Buffer& lens_frame,
                          size_t vals) {
  if (lens_type != pb::DATA_TYPE_INT32) {
    return absl::InvalidArgumentError("kv lens frame is not int32");
  }
  const size_t n = lens_frame.size() / 4;
  // The van's decoder aligned the frame for its element type.
  const int32_t* lens = reinterpret_cast<const int32_t*>(lens_frame.data());
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (lens[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative length ", lens[i], " for key ", i));
    }
    sum += static_cast<uint64_t>(lens[i]);
  }
  if (sum != vals) {
    return absl::InvalidArgumentError(
        absl::StrCat("lens sum to ", sum, " but ", vals, " values follow"));
  }
  return absl::OkStatus();
}

// The number of elements of a values frame of type `type`, or an error for
// a type without a size.
absl::StatusOr<size_t> ValueCount(pb::DataType type, const Buffer& frame) {
  const size_t elem = DataTypeSize(type);
  if (elem == 0) {
    return absl::InvalidArgumentError("kv values of an unknown type");
  }
  return frame.size() / elem;
}

// A request: keys (uint64)[, values[, lens (int32)]], one length per key.
absl::Status CheckRequestLayout(const pb::Meta& meta,
                                const std::vector<Buffer>& frames,
                                int64_t max_message_bytes) {
  if (frames.empty() || frames.size() > 3 ||
      meta.data_types_size() != static_cast<int>(frames.size()) ||
      meta.data_types(0) != pb::DATA_TYPE_UINT64) {
    return absl::InvalidArgumentError(
        "kv request needs frames keys(uint64)[, values[, lens(int32)]]");
  }
  const size_t keys = frames[0].size() / 8;
  size_t vals = 0;
  if (frames.size() >= 2) {
    absl::StatusOr<size_t> count = ValueCount(meta.data_types(1), frames[1]);
    if (!count.ok()) return count.status();
    vals = *count;
  }
  if (frames.size() == 3) {
    if (meta.data_types(2) != pb::DATA_TYPE_INT32) {
      return absl::InvalidArgumentError("kv lens frame is not int32");
    }
    if (frames[2].size() / 4 != keys) {
      return absl::InvalidArgumentError(
          absl::StrCat(frames[2].size() / 4, " lens for ", keys, " keys"));
    }
    absl::Status lens = CheckLensSum(meta.data_types(2), frames[2], vals);
    if (!lens.ok()) return lens;
  } else if ((keys == 0 && vals != 0) || (keys != 0 && vals % keys != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        vals, " values do not divide evenly over ", keys, " keys"));
  }
  return CheckKeySlice(meta, keys, vals, max_message_bytes);
}

// A pull answer: values[, lens (int32)]. How many keys they are for is the
// worker's to check, against the keys it asked.
absl::Status CheckResponseLayout(const pb::Meta& meta,
                                 const std::vector<Buffer>& frames) {
  if (frames.empty() || frames.size() > 2 ||
      meta.data_types_size() != static_cast<int>(frames.size())) {
    return absl::InvalidArgumentError(
        "kv answer needs frames values[, lens(int32)]");
  }
  if (meta.value_offset() != 0 || meta.value_total() != 0) {
    return absl::InvalidArgumentError("a kv answer carries no key slice");
  }
  absl::StatusOr<size_t> vals = ValueCount(meta.data_types(0), frames[0]);
  if (!vals.ok()) return vals.status();
  if (frames.size() == 2) {
    return CheckLensSum(meta.data_types(1), frames[1], *vals);
  }
  return absl::OkStatus();
}

}  // namespace

void EncodeKvRequest(const KVMeta& kv, pb::Meta* meta) {
  meta->set_kv(true);
  meta->set_head(kv.cmd);
  meta->set_push(kv.push);
  meta->set_pull(kv.pull);
  meta->set_table_id(kv.table_id);
  meta->set_clock(kv.clock);
  meta->set_clock_advance(kv.clock_advance);
  meta->set_value_offset(kv.value_offset);
  meta->set_value_total(kv.value_total);
}

KVMeta DecodeKvMeta(const pb::Meta& meta) {
  KVMeta kv;
  kv.cmd = meta.head();
  kv.push = meta.push();
  kv.pull = meta.pull();
  kv.sender = meta.sender();
  kv.timestamp = meta.timestamp();
  kv.customer_id = meta.customer_id();
  kv.table_id = meta.table_id();
  kv.part = meta.part();
  kv.value_offset = meta.value_offset();
  kv.value_total = meta.value_total();
  kv.clock = meta.clock();
  kv.clock_advance = meta.clock_advance();
  return kv;
}

absl::Status CheckKvLayout(const pb::Meta& meta,
                           const std::vector<Buffer>& frames,
                           int64_t max_message_bytes) {
  if (!meta.kv()) {
    return absl::InvalidArgumentError("not a key-value message");
  }
  // The van checked one known data type per frame and whole elements.
  return meta.request() ? CheckRequestLayout(meta, frames, max_message_bytes)
                        : CheckResponseLayout(meta, frames);
}

absl::Status CheckKvFrames(const Message& msg, pb::DataType value_type,
                           int64_t max_message_bytes) {
  absl::Status layout = CheckKvLayout(msg.meta, msg.data, max_message_bytes);
  if (!layout.ok()) return layout;
  return CheckKvValueType(msg, value_type);
}

absl::Status CheckKvValueType(const Message& msg, pb::DataType value_type) {
  // Values are frame 1 of a request (after the keys), frame 0 of an answer.
  const int values = msg.meta.request() ? 1 : 0;
  if (static_cast<int>(msg.data.size()) > values &&
      msg.meta.data_types(values) != value_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv values of type ", KvValueTypeName(msg.meta.data_types(values)),
        ", expected ", KvValueTypeName(value_type),
        " (a key-value app holds values of one type)"));
  }
  return absl::OkStatus();
}

std::string KvValueTypeName(pb::DataType type) {
  switch (type) {
    case pb::DATA_TYPE_FLOAT:
      return "float32";
    case pb::DATA_TYPE_DOUBLE:
      return "float64";
    case pb::DATA_TYPE_INT32:
      return "int32";
    case pb::DATA_TYPE_INT64:
      return "int64";
    case pb::DATA_TYPE_UINT64:
      return "uint64";
    default:
      return absl::StrCat("data type ", static_cast<int>(type));
  }
}

void EncodeKvResponse(const KVMeta& request, int64_t min_clock,
                      pb::Meta* response) {
  response->set_kv(request.pull);
  response->set_push(request.push);
  response->set_pull(request.pull);
  response->set_head(request.cmd);
  response->set_table_id(request.table_id);
  response->set_min_clock(min_clock);
}

void EncodeKvError(const KVMeta& request, const absl::Status& error,
                   pb::Meta* response) {
  response->set_kv(false);  // no data frames
  response->set_push(request.push);
  response->set_pull(request.pull);
  response->set_head(request.cmd);
  response->set_table_id(request.table_id);
  response->set_status_code(static_cast<int>(error.code()));
  response->set_status_message(std::string(error.message()));
}

absl::Status DecodeKvStatus(const pb::Meta& response) {
  const int code = response.status_code();
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::InternalError(absl::StrCat("unknown status code ", code, ": ",
                                            response.status_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      response.status_message());
}

}  // namespace petrel

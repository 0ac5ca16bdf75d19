#include "van/wire_codec.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"

#include "base/status_macros.h"

namespace petrel {
namespace {

void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void PutU16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t GetU16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

absl::StatusOr<pb::Meta> DecodeHeader(const Buffer& header,
                                      const DecodeLimits& limits) {
  if (header.size() < kWirePrefixBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header frame has ", header.size(), " bytes, fewer than the ",
        kWirePrefixBytes, "-byte prefix"));
  }
  const char* p = header.data();
  if (GetU32(p) != kWireMagic) {
    return absl::InvalidArgumentError("bad magic: not a Petrel message");
  }
  if (uint16_t version = GetU16(p + 4); version != kWireVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "protocol version ", version, ", this node speaks ", kWireVersion));
  }
  if (uint16_t flags = GetU16(p + 6); flags != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("header flags ", flags, ", expected 0"));
  }
  uint32_t meta_len = GetU32(p + 8);
  if (meta_len != header.size() - kWirePrefixBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefix declares ", meta_len, " meta bytes but ",
                     header.size() - kWirePrefixBytes, " follow"));
  }
  if (meta_len > static_cast<uint32_t>(limits.max_meta_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "meta of ", meta_len, " bytes exceeds ", limits.max_meta_bytes));
  }
  pb::Meta meta;
  // Protobuf logs an ERROR for each string field with bad UTF-8 it rejects;
  // peer bytes must not write unthrottled logs (the van counts the reject
  // and logs it rate-limited).
  google::protobuf::LogSilencer silence_protobuf;
  if (!meta.ParseFromArray(p + kWirePrefixBytes, static_cast<int>(meta_len))) {
    return absl::InvalidArgumentError("meta does not parse");
  }
  return meta;
}

absl::Status CheckFrames(const pb::Meta& meta, std::vector<Buffer>& frames,
                         const DecodeLimits& limits) {
  if (frames.size() > static_cast<size_t>(limits.max_frames)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        frames.size(), " data frames exceed the limit of ", limits.max_frames));
  }
  if (meta.data_types_size() != static_cast<int>(frames.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("meta lists ", meta.data_types_size(), " data types for ",
                     frames.size(), " frames"));
  }
  int64_t total = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    size_t elem = DataTypeSize(meta.data_types(static_cast<int>(i)));
    if (elem == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame ", i + 1, " has an unknown data type"));
    }
    if (frames[i].size() % elem != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame ", i + 1, " has ", frames[i].size(),
                       " bytes, not a multiple of ", elem));
    }
    if (reinterpret_cast<uintptr_t>(frames[i].data()) % elem != 0) {
      frames[i] = Buffer::CopyOf(frames[i].data(), frames[i].size());
    }
    total += static_cast<int64_t>(frames[i].size());
  }
  if (total > limits.max_message_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("message of ", total, " bytes exceeds the limit of ",
                     limits.max_message_bytes));
  }
  return absl::OkStatus();
}

// A join, an operator's admin request (petrelctl), or a rejoin: all come
// from a connection the scheduler does not know, and name it as the
// client's transport identity. A join or an admin request has no node id;
// a rejoin (a node that had an id asks a restarted scheduler to take it
// back) sends as the id it names, which the scheduler checks against the
// job (scheduler/scheduler_join.cc).
bool IsJoinRequest(const pb::Meta& meta, absl::string_view connection) {
  if (!meta.has_control() || connection.empty()) return false;
  const pb::Control& control = meta.control();
  const bool add_node = control.cmd() == pb::COMMAND_ADD_NODE;
  const bool named =
      add_node
          ? control.nodes_size() == 1 &&
                control.nodes(0).transport_id() == connection
          : control.cmd() == pb::COMMAND_ADMIN &&
                control.admin_request().client().transport_id() == connection;
  if (!named || !meta.request() || meta.recipient() != kSchedulerId) {
    return false;
  }
  if (meta.sender() == kEmptyNodeId) return true;
  return add_node && meta.sender() != kSchedulerId && meta.sender() >= 0 &&
         meta.sender() == control.nodes(0).id();
}

// A reply from the scheduler to a node that has no id yet: it lists the
// node's own transport identity, which only the scheduler was told.
bool IsJoinReply(const pb::Meta& meta, absl::string_view my_transport_id) {
  if (!meta.has_control() || meta.sender() != kSchedulerId) return false;
  pb::Command cmd = meta.control().cmd();
  if (cmd != pb::COMMAND_ADD_NODE && cmd != pb::COMMAND_REJECT &&
      cmd != pb::COMMAND_TERMINATE && cmd != pb::COMMAND_ADMIN) {
    return false;
  }
  if (my_transport_id.empty()) return false;
  for (const pb::Node& node : meta.control().nodes()) {
    if (node.transport_id() == my_transport_id) return true;
  }
  return false;
}

absl::Status CheckAddressing(const pb::Meta& meta,
                             const DecodeContext& context) {
  if (context.expected_sender >= 0) {
    if (meta.sender() != context.expected_sender) {
      return absl::PermissionDeniedError(
          absl::StrCat("sender id ", meta.sender(),
                       " on the connection of node ", context.expected_sender));
    }
  } else if ((context.my_id == kEmptyNodeId || context.rejoining) &&
             meta.has_control() && meta.sender() == kSchedulerId) {
    // Only a join reply naming this node can come from the scheduler
    // before this node has an id, or from a restarted scheduler while this
    // node asks to rejoin; anything else claiming to is forged
    // (Unauthenticated: never held for later, unlike PermissionDenied).
    if (!IsJoinReply(meta, context.my_transport_id)) {
      return absl::UnauthenticatedError(
          "join reply that does not name this node, from an unknown "
          "connection");
    }
  } else if (!(context.is_scheduler &&
               IsJoinRequest(meta, context.connection))) {
    return absl::PermissionDeniedError(absl::StrCat(
        "message from unknown connection claiming sender ", meta.sender()));
  }
  if (context.my_id != kEmptyNodeId && meta.recipient() != context.my_id) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recipient ", meta.recipient(), " is not this node ", context.my_id));
  }
  if (meta.app_id() < 0 || meta.customer_id() < 0 || meta.timestamp() < 0 ||
      meta.part() < 0) {
    return absl::InvalidArgumentError(
        "negative app, customer, timestamp or part");
  }
  return absl::OkStatus();
}

absl::Status CheckControl(const pb::Meta& meta, const DecodeLimits& limits) {
  const pb::Control& c = meta.control();
  if (!pb::Command_IsValid(c.cmd()) || c.cmd() == pb::COMMAND_NONE) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown control command ", c.cmd()));
  }
  if (c.nodes_size() > limits.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(c.nodes_size(), " nodes in one control message"));
  }
  if (c.ranges_size() != c.range_owners_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        c.ranges_size(), " ranges but ", c.range_owners_size(), " owners"));
  }
  return absl::OkStatus();
}

constexpr uint16_t kHelloFlags = 1;

}  // namespace

Buffer HelloFrame() {
  Buffer hello = Buffer::Allocate(kWirePrefixBytes);
  char* p = hello.mutable_data();
  PutU32(p, kWireMagic);
  PutU16(p + 4, kWireVersion);
  PutU16(p + 6, kHelloFlags);
  PutU32(p + 8, 0);
  return hello;
}

bool IsHelloFrame(const char* data, size_t size) {
  return size == kWirePrefixBytes && GetU32(data) == kWireMagic &&
         GetU16(data + 4) == kWireVersion && GetU16(data + 6) == kHelloFlags &&
         GetU32(data + 8) == 0;
}

Buffer EncodeHeader(const pb::Meta& meta) {
  size_t meta_len = meta.ByteSizeLong();
  Buffer header = Buffer::Allocate(kWirePrefixBytes + meta_len);
  char* p = header.mutable_data();
  PutU32(p, kWireMagic);
  PutU16(p + 4, kWireVersion);
  PutU16(p + 6, 0);
  PutU32(p + 8, static_cast<uint32_t>(meta_len));
  // Our own proto into a buffer we sized: cannot fail.
  CHECK(
      meta.SerializeToArray(p + kWirePrefixBytes, static_cast<int>(meta_len)));
  return header;
}

absl::StatusOr<Message> DecodeMessage(const Buffer& header,
                                      std::vector<Buffer> frames,
                                      const DecodeContext& context) {
  Message msg;
  PETREL_ASSIGN_OR_RETURN(msg.meta, DecodeHeader(header, context.limits));
  PETREL_RETURN_IF_ERROR(CheckFrames(msg.meta, frames, context.limits));
  PETREL_RETURN_IF_ERROR(CheckAddressing(msg.meta, context));
  if (msg.meta.has_control()) {
    PETREL_RETURN_IF_ERROR(CheckControl(msg.meta, context.limits));
  }
  // The KV layout (keys, values, lens, key slices) is checked by the KV
  // layer (kv/kv_codec.h) before its handlers see the message.
  if (!msg.meta.kv() &&
      (msg.meta.value_total() != 0 || msg.meta.value_offset() != 0)) {
    return absl::InvalidArgumentError("key slice on a message that is not kv");
  }
  msg.data = std::move(frames);
  return msg;
}

}  // namespace petrel

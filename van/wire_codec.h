// The wire codec: encodes a Message header and decodes + validates received
// messages. DecodeMessage is the only way bytes from a peer become a Message;
// it runs the checks every message must pass (prefix, version, meta, frames
// against their data types and the limits, addressing, control commands)
// before any other code sees the message. What a key-value message's frames
// must satisfy is checked by the KV layer (kv/kv_codec.h). The format is
// described in docs/wire.md.
//
// Thread safety: stateless functions, safe from any thread.
#ifndef PETREL_VAN_WIRE_CODEC_H_
#define PETREL_VAN_WIRE_CODEC_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "van/buffer.h"
#include "van/message.h"

namespace petrel {

inline constexpr uint32_t kWireMagic = 0x4C525450;  // "PTRL" little-endian
inline constexpr uint16_t kWireVersion = 10;
inline constexpr size_t kWirePrefixBytes = 12;  // magic, version, flags, len

struct DecodeLimits {
  // Largest total size of all frames of one message. Default 4 GiB; up to
  // 2^62. Messages over 2 GiB are allowed when this says so.
  int64_t max_message_bytes = int64_t{4} << 30;
  // Most data frames in one message. Default 16.
  int max_frames = 16;
  // Largest serialized Meta. Default 1 MiB.
  int max_meta_bytes = 1 << 20;
  // Most nodes listed in one control message. Default 65536.
  int max_nodes = 1 << 16;
};

struct DecodeContext {
  int my_id = kEmptyNodeId;  // kEmptyNodeId before the scheduler assigns one
  bool is_scheduler = false;
  // The node id bound to the sending connection's transport identity, or -1
  // when the identity is not (yet) known.
  int expected_sender = -1;
  // The sending connection's transport identity (its ZeroMQ routing id,
  // without a thread socket's "#<n>"). A join request must name it as the
  // joining node's transport_id.
  absl::string_view connection;
  // This node's own transport identity. A join reply reaching a node that
  // has no id yet must list it (only the scheduler, which got it in the
  // join request, knows it), so a stranger cannot answer a join.
  absl::string_view my_transport_id;
  // This node lost its scheduler and asks to rejoin: a join reply from an
  // unknown connection (a restarted scheduler's) is accepted if it names
  // this node's transport identity, as before the first join
  // (postoffice_membership.cc then binds the scheduler's new identity).
  bool rejoining = false;
  DecodeLimits limits;
};

// The one-frame message a connection opens with (van/zmq_sockets.cc): the
// prefix with flags 1 and no meta. It tells the receiver, before any large
// message, whose connection it is (its routing id), so that a member's
// connection gets a member's budget (security/peer_registry.h). It is no Petrel
// message: the van consumes it, and the decoder refuses it.
Buffer HelloFrame();
bool IsHelloFrame(const char* data, size_t size);

// Serializes `meta` behind the fixed prefix: frame 0 of a message.
Buffer EncodeHeader(const pb::Meta& meta);

// Decodes frame 0 (`header`) and the data frames into a validated Message.
// Returns InvalidArgument naming the broken rule (bad prefix, version, meta,
// frame sizes, recipient, a key slice on a message that is not kv),
// PermissionDenied for a sender that does
// not match its connection, ResourceExhausted for a message over the limits.
// A data frame that is not aligned for its element type is copied so that
// typed access is always aligned.
absl::StatusOr<Message> DecodeMessage(const Buffer& header,
                                      std::vector<Buffer> frames,
                                      const DecodeContext& context);

}  // namespace petrel

#endif  // PETREL_VAN_WIRE_CODEC_H_

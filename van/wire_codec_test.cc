#include "van/wire_codec.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "van/testing/kv_messages.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr int kServer = 8;
constexpr int kWorker = 9;

// A server (node 8) receiving from the worker bound to the connection.
DecodeContext ServerContext() {
  DecodeContext c;
  c.my_id = kServer;
  c.expected_sender = kWorker;
  return c;
}

Message DataMessage() {
  Message m;
  m.meta.set_sender(kWorker);
  m.meta.set_recipient(kServer);
  m.meta.set_request(true);
  return m;
}

Message KvMessage(std::vector<uint64_t> keys, std::vector<float> vals) {
  return WithKvData(DataMessage(), std::move(keys), std::move(vals));
}

absl::StatusOr<Message> Decode(const Message& m,
                               const DecodeContext& c = ServerContext()) {
  return DecodeMessage(EncodeHeader(m.meta), m.data, c);
}

// A header frame with `meta_bytes` behind a prefix declaring `declared`.
Buffer RawHeader(const std::string& meta_bytes, uint32_t declared,
                 uint32_t magic = kWireMagic, uint16_t version = kWireVersion) {
  std::string out(kWirePrefixBytes, '\0');
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &version, 2);
  std::memcpy(&out[8], &declared, 4);
  out += meta_bytes;
  return Buffer::CopyOf(out.data(), out.size());
}

Buffer RawHeader(const std::string& meta_bytes) {
  return RawHeader(meta_bytes, static_cast<uint32_t>(meta_bytes.size()));
}

absl::StatusCode CodeOf(const absl::StatusOr<Message>& r) {
  return r.status().code();
}

// Expects `r` to have failed with `code` and a message holding `substr`.
void ExpectError(const absl::StatusOr<Message>& r, absl::StatusCode code,
                 const char* substr) {
  EXPECT_EQ(CodeOf(r), code);
  EXPECT_THAT(r.status().message(), HasSubstr(substr));
}

// Expects `m` to be refused (ResourceExhausted) under `c` with the limit
// `limit` set to `refused_at`, and decoded with it set to `accepted_at`.
template <typename T>
void ExpectLimit(const Message& m, DecodeContext c, T DecodeLimits::*limit,
                 int64_t refused_at, int64_t accepted_at) {
  c.limits.*limit = static_cast<T>(refused_at);
  EXPECT_EQ(CodeOf(Decode(m, c)), absl::StatusCode::kResourceExhausted);
  c.limits.*limit = static_cast<T>(accepted_at);
  EXPECT_TRUE(Decode(m, c).ok());
}

TEST(WireCodecTest, RoundTripPreservesMetaAndFrames) {
  Message m = KvMessage({3, 1, 2}, {1.5f, 2.5f, 3.5f});
  m.meta.set_app_id(2);
  m.meta.set_customer_id(3);
  m.meta.set_timestamp(17);
  m.meta.set_push(true);
  m.meta.set_head(5);
  m.meta.set_seq(99);
  m.meta.set_body("hello");
  auto r = Decode(m);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->meta.SerializeAsString(), m.meta.SerializeAsString());
  ASSERT_EQ(r->data.size(), 2u);
  EXPECT_EQ(SArray<uint64_t>(r->data[0]).ToVector(),
            (std::vector<uint64_t>{3, 1, 2}));
  EXPECT_EQ(SArray<float>(r->data[1]).ToVector(),
            (std::vector<float>{1.5f, 2.5f, 3.5f}));
  // Aligned frames are passed on without copying.
  EXPECT_EQ(r->data[0].data(), m.data[0].data());
  EXPECT_EQ(r->data[1].data(), m.data[1].data());
}

// A push of key 7 carrying values [offset, offset + 3) of `total`.
Message KeySlice(int64_t offset, int64_t total) {
  return WithKeySlice(DataMessage(), offset, total);
}

// The KV layout rules (keys, values, lens, key slices) are kv_codec's
// (kv/kv_codec_test.cc); the van passes such messages on unchecked.
TEST(WireCodecTest, LeavesTheKvLayoutToTheKvLayer) {
  EXPECT_TRUE(Decode(KvMessage({1, 2}, {1, 2, 3})).ok());
  EXPECT_TRUE(Decode(KeySlice(98, 100)).ok());
}

TEST(WireCodecTest, RejectsKeySliceOnAMessageThatIsNotKv) {
  Message not_kv = DataMessage();
  not_kv.meta.set_value_total(10);
  ExpectError(Decode(not_kv), absl::StatusCode::kInvalidArgument, "key slice");
}

TEST(WireCodecTest, RoundTripOfControlMessage) {
  Message m;
  m.meta.set_sender(kSchedulerId);
  m.meta.set_recipient(kServer);
  pb::Control* c = m.meta.mutable_control();
  c->set_cmd(pb::COMMAND_ADD_NODE);
  c->add_nodes()->set_host("127.0.0.1");
  c->add_ranges(0);
  c->add_range_owners(0);
  DecodeContext ctx;
  ctx.my_id = kServer;
  ctx.expected_sender = kSchedulerId;
  auto r = Decode(m, ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->meta.SerializeAsString(), m.meta.SerializeAsString());
  EXPECT_TRUE(r->data.empty());
}

TEST(WireCodecTest, RealignsMisalignedFrames) {
  std::vector<uint64_t> keys = {1, 2, 3, 0xFFFFFFFFFFFFFFFFull};
  Buffer storage = Buffer::Allocate(keys.size() * 8 + 1);
  std::memcpy(storage.mutable_data() + 1, keys.data(), keys.size() * 8);
  Buffer misaligned = storage.Slice(1, keys.size() * 8);
  ASSERT_NE(reinterpret_cast<uintptr_t>(misaligned.data()) % 8, 0u);
  Message m = DataMessage();
  m.meta.add_data_types(pb::DATA_TYPE_UINT64);
  m.data.push_back(misaligned);
  auto r = Decode(m);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r->data[0].data()) % 8, 0u);
  EXPECT_EQ(SArray<uint64_t>(r->data[0]).ToVector(), keys);
}

TEST(WireCodecTest, RejectsShortHeader) {
  Buffer h = Buffer::CopyOf("PTRL", 4);
  ExpectError(DecodeMessage(h, {}, ServerContext()),
              absl::StatusCode::kInvalidArgument, "4 bytes");
}

TEST(WireCodecTest, RejectsBadMagic) {
  std::string meta = DataMessage().meta.SerializeAsString();
  ExpectError(DecodeMessage(RawHeader(meta, static_cast<uint32_t>(meta.size()),
                                      0x12345678),
                            {}, ServerContext()),
              absl::StatusCode::kInvalidArgument, "magic");
}

TEST(WireCodecTest, RejectsWrongVersion) {
  std::string meta = DataMessage().meta.SerializeAsString();
  auto r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 1), {},
      ServerContext());
  EXPECT_EQ(CodeOf(r), absl::StatusCode::kInvalidArgument);
  // Version 1 had no Meta.part: its peers cannot answer pushes in parts.
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 1, this node speaks 10"));
  // Version 2 servers sent errors as text in `body`, not as status_code.
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 2), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 2, this node speaks 10"));
  // Version 3 servers answered a pull with the keys before the values.
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 3), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 3, this node speaks 10"));
  // Version 4 nodes accepted join replies from any connection.
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 4), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 4, this node speaks 10"));
  // Version 7 nodes read a key-range map's chains as consecutive ranks
  // (no Control.range_replicas, the ring's size fixed).
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 7), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 7, this node speaks 10"));
  // Version 8 replacements did not wait for the scheduler's answer to
  // their CAUGHT_UP, which may now refuse one made against an older map.
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 8), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 8, this node speaks 10"));
  // Version 9 workers moved a dead server's pushes whole to its successor,
  // and servers' duplicate detection did not tell a push's pieces apart.
  r = DecodeMessage(
      RawHeader(meta, static_cast<uint32_t>(meta.size()), kWireMagic, 9), {},
      ServerContext());
  EXPECT_THAT(r.status().message(),
              HasSubstr("version 9, this node speaks 10"));
}

TEST(WireCodecTest, HelloFrameIsRecognisedAndNoMessage) {
  Buffer hello = HelloFrame();
  EXPECT_TRUE(IsHelloFrame(hello.data(), hello.size()));
  EXPECT_FALSE(IsHelloFrame(hello.data(), hello.size() - 1));
  std::string other(hello.data(), hello.size());
  other[6] = 0;  // flags 0: an ordinary header
  EXPECT_FALSE(IsHelloFrame(other.data(), other.size()));
  // A hello that reached the decoder is no Petrel message.
  EXPECT_EQ(CodeOf(DecodeMessage(hello, {}, DecodeContext())),
            absl::StatusCode::kInvalidArgument);
}

TEST(WireCodecTest, RejectsMetaLengthMismatch) {
  std::string meta = DataMessage().meta.SerializeAsString();
  for (uint32_t declared :
       {static_cast<uint32_t>(meta.size() + 1),
        static_cast<uint32_t>(meta.size() - 1), 0xFFFFFFFFu}) {
    auto r = DecodeMessage(RawHeader(meta, declared), {}, ServerContext());
    EXPECT_EQ(CodeOf(r), absl::StatusCode::kInvalidArgument) << declared;
  }
}

TEST(WireCodecTest, RejectsMetaOverLimit) {
  Message m = DataMessage();
  m.meta.set_body(std::string(100, 'x'));
  ExpectLimit(m, ServerContext(), &DecodeLimits::max_meta_bytes, 64, 1000);
}

TEST(WireCodecTest, RejectsMetaThatDoesNotParse) {
  // Field number 0 is never valid in a protobuf message.
  ExpectError(
      DecodeMessage(RawHeader(std::string("\x00\x01", 2)), {}, ServerContext()),
      absl::StatusCode::kInvalidArgument, "parse");
}

TEST(WireCodecTest, RejectsTooManyFrames) {
  Message m = DataMessage();
  for (int i = 0; i < 5; ++i) m.AddData(SArray<int32_t>{1});
  ExpectLimit(m, ServerContext(), &DecodeLimits::max_frames, 4, 5);
}

TEST(WireCodecTest, RejectsDataTypeCountMismatch) {
  Message m = DataMessage();
  m.AddData(SArray<int32_t>{1});
  m.data.push_back(Buffer::CopyOf("abcd", 4));  // no data type for it
  ExpectError(Decode(m), absl::StatusCode::kInvalidArgument,
              "1 data types for 2 frames");
}

TEST(WireCodecTest, RejectsUnknownDataType) {
  Message m = DataMessage();
  // Field 13 (data_types) as a varint with the unknown value 99.
  std::string meta = m.meta.SerializeAsString() + "\x68\x63";
  std::vector<Buffer> frames = {Buffer::CopyOf("abcdefgh", 8)};
  ExpectError(DecodeMessage(RawHeader(meta), frames, ServerContext()),
              absl::StatusCode::kInvalidArgument, "unknown data type");
}

TEST(WireCodecTest, RejectsFrameSizeNotMultipleOfElement) {
  Message m = DataMessage();
  m.meta.add_data_types(pb::DATA_TYPE_DOUBLE);
  m.data.push_back(Buffer::Allocate(13));
  ExpectError(Decode(m), absl::StatusCode::kInvalidArgument,
              "13 bytes, not a multiple of 8");
}

TEST(WireCodecTest, RejectsTotalOverMaxMessageBytes) {
  Message m = DataMessage();
  m.AddData(SArray<float>(100, 1.0f));  // 400 bytes
  m.AddData(SArray<float>(100, 1.0f));  // 800 in total
  ExpectLimit(m, ServerContext(), &DecodeLimits::max_message_bytes, 799, 800);
}

TEST(WireCodecTest, RejectsSenderNotMatchingConnection) {
  Message m = DataMessage();
  m.meta.set_sender(11);  // the connection belongs to node 9
  ExpectError(Decode(m), absl::StatusCode::kPermissionDenied, "sender id 11");
}

TEST(WireCodecTest, RejectsDataFromUnknownConnection) {
  DecodeContext c = ServerContext();
  c.expected_sender = -1;
  EXPECT_EQ(CodeOf(Decode(DataMessage(), c)),
            absl::StatusCode::kPermissionDenied);
  c.is_scheduler = true;
  c.my_id = kSchedulerId;
  Message m = DataMessage();
  m.meta.set_recipient(kSchedulerId);
  EXPECT_EQ(CodeOf(Decode(m, c)), absl::StatusCode::kPermissionDenied);
}

constexpr char kJoiner[] = "p00000000000000aa";

Message JoinRequest() {
  Message m;
  m.meta.set_sender(kEmptyNodeId);
  m.meta.set_recipient(kSchedulerId);
  m.meta.set_request(true);
  m.meta.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  pb::Node* node = m.meta.mutable_control()->add_nodes();
  node->set_role(pb::ROLE_SERVER);
  node->set_transport_id(kJoiner);
  return m;
}

TEST(WireCodecTest, AcceptsJoinRequestOnlyAtScheduler) {
  DecodeContext scheduler;
  scheduler.my_id = kSchedulerId;
  scheduler.is_scheduler = true;
  scheduler.connection = kJoiner;
  EXPECT_TRUE(Decode(JoinRequest(), scheduler).ok());
  DecodeContext node;
  node.my_id = kServer;
  node.connection = kJoiner;
  Message m = JoinRequest();
  m.meta.set_recipient(kServer);
  EXPECT_EQ(CodeOf(Decode(m, node)), absl::StatusCode::kPermissionDenied);
  // A join request must come from a node without an id.
  m = JoinRequest();
  m.meta.set_sender(kWorker);
  EXPECT_EQ(CodeOf(Decode(m, scheduler)), absl::StatusCode::kPermissionDenied);
}

TEST(WireCodecTest, RejectsJoinRequestNamingAnotherConnection) {
  DecodeContext scheduler;
  scheduler.my_id = kSchedulerId;
  scheduler.is_scheduler = true;
  scheduler.connection = "p00000000000000bb";
  EXPECT_EQ(CodeOf(Decode(JoinRequest(), scheduler)),
            absl::StatusCode::kPermissionDenied);
  Message two = JoinRequest();  // a join names exactly one node
  *two.meta.mutable_control()->add_nodes() = two.meta.control().nodes(0);
  scheduler.connection = kJoiner;
  EXPECT_EQ(CodeOf(Decode(two, scheduler)),
            absl::StatusCode::kPermissionDenied);
}

TEST(WireCodecTest, AcceptsJoinReplyOnlyWhileWithoutIdAndNamingThisNode) {
  for (pb::Command cmd :
       {pb::COMMAND_ADD_NODE, pb::COMMAND_REJECT, pb::COMMAND_TERMINATE}) {
    Message m;
    m.meta.set_sender(kSchedulerId);
    m.meta.set_recipient(-1);  // the scheduler's temporary route
    m.meta.mutable_control()->set_cmd(cmd);
    DecodeContext joining;  // my_id 0, connection unknown
    joining.my_transport_id = kJoiner;
    // A reply that does not name this node's transport identity may come
    // from anyone who can reach the port: refused.
    EXPECT_EQ(CodeOf(Decode(m, joining)), absl::StatusCode::kUnauthenticated)
        << pb::Command_Name(cmd);
    m.meta.mutable_control()->add_nodes()->set_transport_id(
        "p00000000000000bb");
    EXPECT_EQ(CodeOf(Decode(m, joining)), absl::StatusCode::kUnauthenticated)
        << pb::Command_Name(cmd);
    m.meta.mutable_control()->add_nodes()->set_transport_id(kJoiner);
    EXPECT_TRUE(Decode(m, joining).ok()) << pb::Command_Name(cmd);
    DecodeContext joined;
    joined.my_id = kWorker;
    joined.my_transport_id = kJoiner;
    m.meta.set_recipient(kWorker);
    EXPECT_EQ(CodeOf(Decode(m, joined)), absl::StatusCode::kPermissionDenied)
        << pb::Command_Name(cmd);
  }
  // Other commands are no join reply.
  Message barrier;
  barrier.meta.set_sender(kSchedulerId);
  barrier.meta.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
  barrier.meta.mutable_control()->add_nodes()->set_transport_id(kJoiner);
  DecodeContext joining;
  joining.my_transport_id = kJoiner;
  EXPECT_EQ(CodeOf(Decode(barrier, joining)),
            absl::StatusCode::kUnauthenticated);
}

// A rejoin: a node that had an id asks a restarted scheduler, which does
// not know its connection, to take it back. It sends as the id it names, on
// the connection it names, like a join.
TEST(WireCodecTest, AcceptsRejoinAsTheIdAndConnectionItNames) {
  DecodeContext scheduler;  // a restarted scheduler: the connection is new
  scheduler.my_id = kSchedulerId;
  scheduler.is_scheduler = true;
  scheduler.connection = kJoiner;
  Message m = JoinRequest();
  m.meta.set_sender(kWorker);
  m.meta.mutable_control()->mutable_nodes(0)->set_id(kWorker);
  EXPECT_TRUE(Decode(m, scheduler).ok());
  // On another connection than the one it names.
  scheduler.connection = "p00000000000000bb";
  EXPECT_EQ(CodeOf(Decode(m, scheduler)), absl::StatusCode::kPermissionDenied);
  scheduler.connection = kJoiner;
  // Claiming another id than the node it carries, or the scheduler's.
  m.meta.mutable_control()->mutable_nodes(0)->set_id(kServer);
  EXPECT_EQ(CodeOf(Decode(m, scheduler)), absl::StatusCode::kPermissionDenied);
  m.meta.set_sender(kSchedulerId);
  m.meta.mutable_control()->mutable_nodes(0)->set_id(kSchedulerId);
  EXPECT_EQ(CodeOf(Decode(m, scheduler)), absl::StatusCode::kPermissionDenied);
  // Anything else from the unknown connection still is not accepted.
  m = JoinRequest();
  m.meta.set_sender(kWorker);
  m.meta.mutable_control()->mutable_nodes(0)->set_id(kWorker);
  m.meta.mutable_control()->set_cmd(pb::COMMAND_HEARTBEAT);
  EXPECT_EQ(CodeOf(Decode(m, scheduler)), absl::StatusCode::kPermissionDenied);
}

// While a node asks to rejoin, a restarted scheduler (a connection it does
// not know) may answer, naming the node as every join reply must; nothing
// else from an unknown connection speaks for the scheduler.
TEST(WireCodecTest, AcceptsJoinReplyFromUnknownConnectionWhileRejoining) {
  Message m;
  m.meta.set_sender(kSchedulerId);
  m.meta.set_recipient(kWorker);
  m.meta.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  m.meta.mutable_control()->add_nodes()->set_id(kSchedulerId);
  DecodeContext rejoining;
  rejoining.my_id = kWorker;
  rejoining.my_transport_id = kJoiner;
  rejoining.rejoining = true;
  // Not naming this node: a stranger's.
  EXPECT_EQ(CodeOf(Decode(m, rejoining)), absl::StatusCode::kUnauthenticated);
  m.meta.mutable_control()->add_nodes()->set_transport_id(kJoiner);
  EXPECT_TRUE(Decode(m, rejoining).ok());
  m.meta.mutable_control()->set_cmd(pb::COMMAND_REJECT);
  EXPECT_TRUE(Decode(m, rejoining).ok());
  m.meta.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
  EXPECT_EQ(CodeOf(Decode(m, rejoining)), absl::StatusCode::kUnauthenticated);
  // Not rejoining: a join reply from an unknown connection is refused.
  m.meta.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  rejoining.rejoining = false;
  EXPECT_EQ(CodeOf(Decode(m, rejoining)), absl::StatusCode::kPermissionDenied);
}

TEST(WireCodecTest, RejectsRecipientMismatch) {
  Message m = DataMessage();
  m.meta.set_recipient(10);
  ExpectError(Decode(m), absl::StatusCode::kInvalidArgument, "recipient 10");
}

TEST(WireCodecTest, RejectsNegativeAppCustomerTimestampOrPart) {
  for (int field = 0; field < 4; ++field) {
    Message m = DataMessage();
    if (field == 0) m.meta.set_app_id(-1);
    if (field == 1) m.meta.set_customer_id(-1);
    if (field == 2) m.meta.set_timestamp(-1);
    if (field == 3) m.meta.set_part(-1);
    EXPECT_EQ(CodeOf(Decode(m)), absl::StatusCode::kInvalidArgument) << field;
  }
}

// A control message from the scheduler to a joined server.
Message ControlMessage(pb::Command cmd) {
  Message m;
  m.meta.set_sender(kSchedulerId);
  m.meta.set_recipient(kServer);
  m.meta.mutable_control()->set_cmd(cmd);
  return m;
}

DecodeContext FromScheduler() {
  DecodeContext c;
  c.my_id = kServer;
  c.expected_sender = kSchedulerId;
  return c;
}

TEST(WireCodecTest, RejectsUnknownControlCommand) {
  EXPECT_TRUE(
      Decode(ControlMessage(pb::COMMAND_BARRIER), FromScheduler()).ok());
  EXPECT_EQ(CodeOf(Decode(ControlMessage(static_cast<pb::Command>(99)),
                          FromScheduler())),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(Decode(ControlMessage(pb::COMMAND_NONE), FromScheduler())),
            absl::StatusCode::kInvalidArgument);
}

TEST(WireCodecTest, RejectsTooManyNodes) {
  Message m = ControlMessage(pb::COMMAND_ADD_NODE);
  for (int i = 0; i < 3; ++i) m.meta.mutable_control()->add_nodes();
  ExpectLimit(m, FromScheduler(), &DecodeLimits::max_nodes, 2, 3);
}

TEST(WireCodecTest, RejectsRangesOwnersMismatch) {
  Message m = ControlMessage(pb::COMMAND_ADD_NODE);
  m.meta.mutable_control()->add_ranges(0);
  m.meta.mutable_control()->add_ranges(100);
  m.meta.mutable_control()->add_range_owners(0);
  ExpectError(Decode(m, FromScheduler()), absl::StatusCode::kInvalidArgument,
              "2 ranges but 1 owners");
}

}  // namespace
}  // namespace petrel

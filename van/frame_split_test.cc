#include "van/frame_split.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>
#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/testing/van_cluster.h"
#include "security/curve_keys.h"
#include "van/zmq_van.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr size_t kPart = 1024;

// A data frame of `size` bytes whose every byte depends on its position.
Buffer Pattern(size_t size, int seed) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) {
    b.mutable_data()[i] = static_cast<char>((i * 131 + seed * 7) % 251);
  }
  return b;
}

pb::Meta Meta(size_t frames) {
  pb::Meta meta;
  meta.set_sender(9);
  meta.set_recipient(8);
  meta.set_request(true);
  for (size_t i = 0; i < frames; ++i) meta.add_data_types(pb::DATA_TYPE_BYTES);
  return meta;
}

uint64_t U64(const Buffer& b, size_t index) {
  uint64_t v;
  std::memcpy(&v, b.data() + 8 * index, 8);
  return v;
}

Buffer Layout(const std::vector<uint64_t>& words) {
  Buffer b = Buffer::Allocate(8 * words.size());
  std::memcpy(b.mutable_data(), words.data(), 8 * words.size());
  return b;
}

// Splits `sizes` at `part`, joins them again, and checks that the data and
// a decodable header come back.
void RoundTrip(const std::vector<size_t>& sizes, size_t part,
               DecodeLimits limits = DecodeLimits()) {
  std::vector<Buffer> data;
  for (size_t i = 0; i < sizes.size(); ++i) {
    data.push_back(Pattern(sizes[i], static_cast<int>(i)));
  }
  std::vector<Buffer> wire =
      SplitFrames(EncodeHeader(Meta(sizes.size())), data, part);
  ASSERT_TRUE(IsSplitHeader(wire[0]));
  ASSERT_GE(wire.size(), 2u);
  EXPECT_LE(wire.size() - 2, static_cast<size_t>(kMaxSplitParts));
  Buffer header = wire[0];
  absl::StatusOr<std::vector<Buffer>> joined = JoinSplitFrames(
      &header, std::vector<Buffer>(wire.begin() + 1, wire.end()), limits);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_FALSE(IsSplitHeader(header));
  ASSERT_EQ(joined->size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ((*joined)[i].size(), sizes[i]) << "frame " << i;
    if (sizes[i] == 0) continue;  // memcmp may not see a null pointer
    EXPECT_EQ(std::memcmp((*joined)[i].data(), data[i].data(), sizes[i]), 0)
        << "frame " << i;
  }
  DecodeContext context;
  context.my_id = 8;
  context.expected_sender = 9;
  context.limits = limits;
  absl::StatusOr<Message> msg =
      DecodeMessage(header, *std::move(joined), context);
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(msg->data.size(), sizes.size());
}

TEST(SplitFramesTest, LeavesMessagesWithoutLargeFramesAlone) {
  for (size_t part : {size_t{0}, kPart}) {
    std::vector<Buffer> data = {Pattern(kPart, 0), Buffer(), Pattern(3, 1)};
    std::vector<Buffer> wire = SplitFrames(EncodeHeader(Meta(3)), data, part);
    ASSERT_EQ(wire.size(), 4u);
    EXPECT_FALSE(IsSplitHeader(wire[0]));
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(wire[i + 1].data(), data[i].data());  // the same bytes
    }
  }
  // No splitting at all with a part size of 0, however large the frame.
  EXPECT_EQ(SplitFrames(EncodeHeader(Meta(1)), {Pattern(1 << 20, 0)}, 0).size(),
            2u);
}

TEST(SplitFramesTest, SendsPartsOfTheDataWithoutCopying) {
  Buffer big = Pattern(3 * kPart + 1, 0);  // one byte over 3 parts
  Buffer exact = Pattern(2 * kPart, 1);    // an exact multiple
  Buffer small = Pattern(10, 2);
  std::vector<Buffer> wire =
      SplitFrames(EncodeHeader(Meta(4)), {big, exact, Buffer(), small}, kPart);
  ASSERT_TRUE(IsSplitHeader(wire[0]));
  const Buffer& layout = wire[1];
  ASSERT_EQ(layout.size(), 8u * 5);
  EXPECT_EQ(U64(layout, 0), kPart);
  EXPECT_EQ(U64(layout, 1), 3 * kPart + 1);
  EXPECT_EQ(U64(layout, 2), 2 * kPart);
  EXPECT_EQ(U64(layout, 3), 0u);
  EXPECT_EQ(U64(layout, 4), 10u);
  // 4 + 2 + 1 (empty) + 1 parts after the header and layout.
  ASSERT_EQ(wire.size(), 2u + 8);
  std::vector<size_t> sizes;
  for (size_t i = 2; i < wire.size(); ++i) sizes.push_back(wire[i].size());
  EXPECT_EQ(sizes,
            (std::vector<size_t>{kPart, kPart, kPart, 1, kPart, kPart, 0, 10}));
  EXPECT_EQ(wire[2].data(), big.data());
  EXPECT_EQ(wire[5].data(), big.data() + 3 * kPart);
  EXPECT_EQ(wire[7].data(), exact.data() + kPart);
  EXPECT_EQ(wire[9].data(), small.data());
}

TEST(SplitFramesTest, JoinsWhatItSplitAtEveryBoundary) {
  for (size_t size : {kPart + 1, 2 * kPart - 1, 2 * kPart, 2 * kPart + 1,
                      7 * kPart, 7 * kPart + 5}) {
    SCOPED_TRACE(size);
    RoundTrip({size}, kPart);
    RoundTrip({0, size, 1, kPart, kPart - 1, 0}, kPart);
  }
  RoundTrip({1 << 20, 8 << 10}, 128 << 10);
}

TEST(SplitFramesTest, RaisesThePartSizeToStayWithinThePartLimit) {
  // At 16 bytes a part this would be one part over the limit.
  const size_t size = 16 * kMaxSplitParts + 1;
  std::vector<Buffer> wire =
      SplitFrames(EncodeHeader(Meta(1)), {Pattern(size, 0)}, 16);
  ASSERT_TRUE(IsSplitHeader(wire[0]));
  EXPECT_EQ(U64(wire[1], 0), 32u);
  EXPECT_EQ(wire.size(), 2u + (size + 31) / 32);
  RoundTrip({size}, 16);
  RoundTrip({size, size, 0, 5}, 16);
}

TEST(SplitFramesTest, JoinsMessagesOfExactlyTheMaximumSize) {
  DecodeLimits limits;
  limits.max_message_bytes = 10 * kPart + 3;
  limits.max_frames = 2;
  RoundTrip({4 * kPart, 6 * kPart + 3}, kPart, limits);
}

// Joins `wire` (layout and parts) behind a split header of one frame.
absl::Status Join(std::vector<Buffer> wire,
                  DecodeLimits limits = DecodeLimits()) {
  std::vector<Buffer> split =
      SplitFrames(EncodeHeader(Meta(1)), {Pattern(2, 0)}, 1);
  Buffer header = split[0];
  return JoinSplitFrames(&header, std::move(wire), limits).status();
}

TEST(SplitFramesTest, RefusesLayoutsThatDoNotParse) {
  EXPECT_THAT(Join({}).message(), HasSubstr("without a layout frame"));
  for (size_t bytes : {0, 8, 12, 20}) {
    absl::Status s = Join({Buffer::Allocate(bytes)});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bytes;
    EXPECT_THAT(s.message(), HasSubstr("split layout of"));
  }
  absl::Status s = Join({Layout({0, 5}), Pattern(5, 0)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("part size 0"));
  // The header must say split.
  Buffer plain = EncodeHeader(Meta(1));
  EXPECT_EQ(JoinSplitFrames(&plain, {Layout({4, 4}), Pattern(4, 0)}, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SplitFramesTest, RefusesPartsThatDoNotMatchTheLayout) {
  // 10 bytes at 4 a part: parts of 4, 4, 2.
  const Buffer layout = Layout({4, 10});
  auto parts = [](std::vector<size_t> sizes) {
    std::vector<Buffer> out;
    for (size_t n : sizes) out.push_back(Pattern(n, 0));
    return out;
  };
  auto join = [&](std::vector<size_t> sizes) {
    std::vector<Buffer> wire = parts(sizes);
    wire.insert(wire.begin(), layout);
    return Join(std::move(wire));
  };
  EXPECT_TRUE(join({4, 4, 2}).ok());
  absl::Status missing = join({4, 4});
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(),
              HasSubstr("declares 3 parts but 2 part frames came"));
  EXPECT_THAT(join({4, 4, 2, 0}).message(),
              HasSubstr("declares 3 parts but 4 part frames came"));
  absl::Status short_part = join({3, 4, 3});
  EXPECT_EQ(short_part.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      short_part.message(),
      HasSubstr("part 0 of data frame 1 has 3 bytes, the layout says 4"));
  EXPECT_THAT(
      join({4, 4, 4}).message(),
      HasSubstr("part 2 of data frame 1 has 4 bytes, the layout says 2"));
  // An empty frame is one empty part.
  EXPECT_THAT(
      Join({Layout({4, 0}), Pattern(1, 0)}).message(),
      HasSubstr("part 0 of data frame 1 has 1 bytes, the layout says 0"));
}

TEST(SplitFramesTest, RefusesMessagesOverTheLimits) {
  DecodeLimits limits;
  limits.max_frames = 2;
  limits.max_message_bytes = 100;
  absl::Status frames =
      Join({Layout({4, 1, 1, 1}), Pattern(1, 0), Pattern(1, 0), Pattern(1, 0)},
           limits);
  EXPECT_EQ(frames.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(frames.message(),
              HasSubstr("3 data frames, over the limit of 2"));
  absl::Status bytes = Join({Layout({64, 64, 37})}, limits);
  EXPECT_EQ(bytes.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(bytes.message(), HasSubstr("limit of 100 bytes"));
  // Sizes that would wrap around when added.
  EXPECT_EQ(
      Join({Layout({1 << 20, uint64_t{1} << 63, uint64_t{1} << 63})}).code(),
      absl::StatusCode::kResourceExhausted);
  // One part over the part limit, refused before looking at the parts.
  absl::Status parts = Join({Layout({1, kMaxSplitParts + 1})});
  EXPECT_EQ(parts.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(parts.message(),
              HasSubstr(absl::StrCat("more than ", kMaxSplitParts, " parts")));
}

// Two ZmqVans, node 8 and node 9, connected both ways; node 8 records what
// it receives.
class SplitVanTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& van : vans_) van->Stop();
    if (!keys_path_.empty()) unlink(keys_path_.c_str());
  }
  static VanOptions Local() {
    VanOptions o;
    o.bind_host = "127.0.0.1";
    o.tick_interval = absl::Milliseconds(10);
    return o;
  }
  // Gives both vans CURVE keys, each admitting the other.
  void UseCurve(VanOptions* server, VanOptions* worker) {
    char path[] = "/tmp/petrel_split_keysXXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    keys_path_ = path;
    CurveKeyPair s = NewCurveKeyPair().value();
    CurveKeyPair w = NewCurveKeyPair().value();
    std::ofstream(keys_path_) << s.public_key << " roles=server\n"
                              << w.public_key << " roles=worker\n";
    server->curve.keys = s;
    server->curve.authorized_keys_path = keys_path_;
    worker->curve.keys = w;
    worker->curve.authorized_keys_path = keys_path_;
  }
  void Start(VanOptions server, VanOptions worker) {
    vans_.push_back(std::make_unique<ZmqVan>(server, &server_metrics_));
    vans_.push_back(std::make_unique<ZmqVan>(worker, &worker_metrics_));
    vans_[0]->set_my_id(8);
    vans_[1]->set_my_id(9);
    ASSERT_TRUE(vans_[0]
                    ->Start(
                        [this](Message&& m) {
                          absl::MutexLock lock(&mu_);
                          got_.push_back(std::move(m));
                        },
                        nullptr)
                    .ok());
    ASSERT_TRUE(vans_[1]->Start([](Message&&) {}, nullptr).ok());
    vans_[0]->Connect(LoopbackNode(*vans_[0], 8));
    vans_[0]->Connect(LoopbackNode(*vans_[1], 9));
    vans_[1]->Connect(LoopbackNode(*vans_[0], 8));
  }
  ZmqVan& worker() { return *vans_[1]; }
  std::vector<Message> got() {
    absl::MutexLock lock(&mu_);
    return got_;
  }
  double Rejected(const std::string& reason) {
    return server_metrics_
        .Value("petrel_van_messages_rejected_total", {{"reason", reason}})
        .value_or(0);
  }
  // Sends frames of `sizes` from the worker and checks they arrive whole,
  // as the `index`th message.
  void SendAndCheck(const std::vector<size_t>& sizes, size_t index) {
    Message m;
    m.meta = Meta(sizes.size());
    std::vector<Buffer> data;
    for (size_t i = 0; i < sizes.size(); ++i) {
      data.push_back(Pattern(sizes[i], static_cast<int>(i + index)));
    }
    m.data = data;
    ASSERT_TRUE(worker().Send(std::move(m)).ok());
    ASSERT_TRUE(
        WaitUntil([&] { return got().size() > index; }, absl::Seconds(20)));
    const Message msg = got()[index];
    ASSERT_EQ(msg.data.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_EQ(msg.data[i].size(), sizes[i]);
      if (sizes[i] == 0) continue;
      EXPECT_EQ(std::memcmp(msg.data[i].data(), data[i].data(), sizes[i]), 0);
    }
  }

  MetricsRegistry server_metrics_, worker_metrics_;
  std::vector<std::unique_ptr<ZmqVan>> vans_;
  std::string keys_path_;
  absl::Mutex mu_;
  std::vector<Message> got_ ABSL_GUARDED_BY(mu_);
};

TEST_F(SplitVanTest, VansSplitAndJoinLargeFrames) {
  VanOptions server = Local(), worker = Local();
  worker.split_frame_bytes = 4096;
  ASSERT_NO_FATAL_FAILURE(Start(server, worker));
  SendAndCheck({1 << 20, 0, 4096, 4097, 3}, 0);
  SendAndCheck({8192}, 1);
  SendAndCheck({}, 2);
  EXPECT_EQ(worker_metrics_.Value("petrel_van_bytes_sent_total").value_or(0),
            (1 << 20) + 4096 + 4097 + 3 + 8192);
  EXPECT_EQ(Rejected("invalid_argument") + Rejected("resource_exhausted"), 0);
}

TEST(SplitPartBytesTest, SplitsWithCurveUnlessToldOtherwise) {
  VanOptions options;
  EXPECT_EQ(SplitPartBytes(options), 0u);
  options.split_frame_bytes = 5000;
  EXPECT_EQ(SplitPartBytes(options), 5000u);
  options.curve.keys = NewCurveKeyPair().value();
  EXPECT_EQ(SplitPartBytes(options), 5000u);
  options.split_frame_bytes = 0;
  EXPECT_EQ(SplitPartBytes(options), 0u);
  options.split_frame_bytes = -1;
  EXPECT_EQ(SplitPartBytes(options), kDefaultCurvePartBytes);
}

TEST_F(SplitVanTest, CurveSplitsByDefault) {
  VanOptions server = Local(), worker = Local();
  ASSERT_NO_FATAL_FAILURE(UseCurve(&server, &worker));
  ASSERT_NO_FATAL_FAILURE(Start(server, worker));
  SendAndCheck({8, (1 << 20) + 4, 0}, 0);
  std::vector<Buffer> wire = SplitFrames(
      EncodeHeader(Meta(1)), {Pattern(1 << 20, 0)}, kDefaultCurvePartBytes);
  EXPECT_EQ(wire.size(), 2u + (1 << 20) / kDefaultCurvePartBytes);
}

// A raw DEALER (a stranger) sends split messages that lie; the van counts
// each and goes on.
TEST_F(SplitVanTest, RefusesAndCountsHostileSplitMessages) {
  ASSERT_NO_FATAL_FAILURE(Start(Local(), Local()));
  std::vector<std::vector<Buffer>> messages;
  const Buffer header =
      SplitFrames(EncodeHeader(Meta(1)), {Pattern(2, 0)}, 1)[0];
  // 10 bytes at 4 a part, but the second part is short.
  messages.push_back(
      {header, Layout({4, 10}), Pattern(4, 0), Pattern(3, 0), Pattern(2, 0)});
  // More part frames than any split message may have.
  std::vector<Buffer> many = {header, Layout({1, kMaxSplitParts + 8})};
  for (int i = 0; i < kMaxSplitParts + 8; ++i) many.push_back(Pattern(1, 0));
  messages.push_back(many);
  // A part count the layout does not declare.
  messages.push_back({header, Layout({4, 8}), Pattern(4, 0)});
  void* context = zmq_ctx_new();
  void* dealer = zmq_socket(context, ZMQ_DEALER);
  const std::string endpoint =
      absl::StrCat("tcp://127.0.0.1:", vans_[0]->port());
  ASSERT_EQ(zmq_connect(dealer, endpoint.c_str()), 0);
  for (const std::vector<Buffer>& frames : messages) {
    for (size_t i = 0; i < frames.size(); ++i) {
      ASSERT_GE(zmq_send(dealer, frames[i].data(), frames[i].size(),
                         i + 1 < frames.size() ? ZMQ_SNDMORE : 0),
                0);
    }
  }
  EXPECT_TRUE(WaitUntil([&] {
    return Rejected("invalid_argument") == 2 &&
           Rejected("resource_exhausted") == 1;
  }));
  zmq_close(dealer);
  zmq_ctx_term(context);
  // A member's messages still arrive.
  ASSERT_NO_FATAL_FAILURE(SendAndCheck({100}, 0));
  EXPECT_EQ(got().size(), 1u);
}

}  // namespace
}  // namespace petrel

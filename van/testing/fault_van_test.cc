#include "van/testing/fault_van.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

constexpr int kSenderId = 8;
constexpr int kReceiverId = 9;
constexpr absl::Duration kWait = absl::Seconds(10);

// A kv message from the sender with `ts` as its timestamp: 3 keys with 2
// floats each, or variable lengths when `with_lens`.
Message KvMessage(int ts, bool with_lens = false) {
  Message msg;
  msg.meta.set_sender(kSenderId);
  msg.meta.set_recipient(kReceiverId);
  msg.meta.set_timestamp(ts);
  msg.meta.set_request(true);
  msg.meta.set_push(true);
  msg.meta.set_kv(true);
  msg.AddData(SArray<uint64_t>{1, 2, static_cast<uint64_t>(ts)});
  if (with_lens) {
    msg.AddData(SArray<float>{1, 2, 3, 4, 5, 6});
    msg.AddData(SArray<int32_t>{1, 2, 3});
  } else {
    msg.AddData(SArray<float>{1, 2, 3, 4, 5, static_cast<float>(ts)});
  }
  return msg;
}

// The receiver's rejects, over every code the decoder returns.
int64_t Rejected(const MetricsRegistry& metrics) {
  int64_t total = 0;
  for (const char* reason :
       {"invalid_argument", "permission_denied", "resource_exhausted"}) {
    absl::StatusOr<double> v = metrics.Value(
        "petrel_van_messages_rejected_total", {{"reason", reason}});
    if (v.ok()) total += static_cast<int64_t>(*v);
  }
  return total;
}

// A FaultVan (node 8) sending to a plain LoopbackVan (node 9) that records
// what it accepts.
class FaultVanTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(StartPair(FaultOptions()).ok()); }

  absl::Status StartPair(FaultOptions options) {
    VanOptions vo;
    vo.tick_interval = absl::Milliseconds(5);
    fault_ = std::make_unique<FaultVan>(
        std::make_unique<LoopbackVan>(&network_, vo, &sender_metrics_),
        options);
    receiver_ =
        std::make_unique<LoopbackVan>(&network_, vo, &receiver_metrics_);
    fault_->set_my_id(kSenderId);
    receiver_->set_my_id(kReceiverId);
    absl::Status s = fault_->Start([](Message&&) {}, nullptr);
    if (!s.ok()) return s;
    s = receiver_->Start([this](Message&& m) { Record(std::move(m)); },
                         nullptr);
    if (!s.ok()) return s;
    fault_->Connect(LoopbackNode(*receiver_, kReceiverId));
    receiver_->Connect(LoopbackNode(*fault_, kSenderId));
    return absl::OkStatus();
  }

  void Record(Message&& m) {
    absl::MutexLock lock(&mu_);
    received_.push_back(std::move(m));
  }

  // Waits until `n` messages were accepted; returns their timestamps.
  std::vector<int> WaitForTimestamps(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return received_.size() >= n;
    };
    EXPECT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&enough), kWait))
        << "only " << received_.size() << " of " << n << " arrived";
    std::vector<int> ts;
    for (const Message& m : received_) ts.push_back(m.meta.timestamp());
    return ts;
  }

  // Turns faults off and sends a marker (timestamp `ts`) behind everything
  // sent so far: LoopbackVan delivers in order, so once the marker arrived,
  // every earlier message that was not dropped arrived or was rejected.
  std::vector<int> SendMarkerAndCollect(int ts) {
    fault_->set_options(FaultOptions());
    EXPECT_TRUE(fault_->Send(KvMessage(ts)).ok());
    absl::MutexLock lock(&mu_);
    auto marked = [this, ts]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return !received_.empty() && received_.back().meta.timestamp() == ts;
    };
    EXPECT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&marked), kWait));
    std::vector<int> out;
    for (const Message& m : received_) out.push_back(m.meta.timestamp());
    return out;
  }

  LoopbackNetwork network_;
  MetricsRegistry sender_metrics_;
  MetricsRegistry receiver_metrics_;
  absl::Mutex mu_;
  std::vector<Message> received_ ABSL_GUARDED_BY(mu_);
  // Last, so they are destroyed first: their threads call Record until
  // they stop.
  std::unique_ptr<FaultVan> fault_;
  std::unique_ptr<LoopbackVan> receiver_;
};

TEST_F(FaultVanTest, PassesMessagesThroughUnchangedWithoutFaults) {
  EXPECT_EQ(fault_->transport_id(), fault_->inner()->transport_id());
  for (int ts = 0; ts < 20; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  std::vector<int> ts = WaitForTimestamps(20);
  std::vector<int> want(20);
  for (int i = 0; i < 20; ++i) want[i] = i;
  EXPECT_EQ(ts, want);
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(SArray<float>(received_[7].data[1]).ToVector(),
            (std::vector<float>{1, 2, 3, 4, 5, 7}));
  EXPECT_EQ(fault_->stats().sent, 20);
}

TEST_F(FaultVanTest, DropsMessages) {
  FaultOptions o;
  o.drop_probability = 1;
  fault_->set_options(o);
  for (int ts = 0; ts < 10; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  EXPECT_EQ(SendMarkerAndCollect(100), std::vector<int>{100});
  EXPECT_EQ(fault_->stats().dropped, 10);
  EXPECT_EQ(*sender_metrics_.Value("petrel_fault_van_injected_total",
                                   {{"fault", "drop"}}),
            10);
}

TEST_F(FaultVanTest, LeavesControlMessagesAloneByDefault) {
  FaultOptions o;
  o.drop_probability = 1;
  fault_->set_options(o);
  Message control = KvMessage(5);
  control.meta.mutable_control()->set_cmd(pb::COMMAND_HEARTBEAT);
  ASSERT_TRUE(fault_->Send(control).ok());
  ASSERT_TRUE(fault_->Send(KvMessage(6)).ok());
  o.data_messages_only = false;
  fault_->set_options(o);
  ASSERT_TRUE(fault_->Send(control).ok());
  EXPECT_EQ(SendMarkerAndCollect(100), (std::vector<int>{5, 100}));
}

TEST_F(FaultVanTest, DuplicatesMessages) {
  FaultOptions o;
  o.duplicate_probability = 1;
  fault_->set_options(o);
  for (int ts = 0; ts < 3; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  EXPECT_EQ(SendMarkerAndCollect(100),
            (std::vector<int>{0, 0, 1, 1, 2, 2, 100}));
  EXPECT_EQ(fault_->stats().duplicated, 3);
}

TEST_F(FaultVanTest, DelayedMessagesArriveAfterLaterOnes) {
  FaultOptions o;
  o.delay_probability = 1;
  o.max_delay = absl::Milliseconds(100);
  fault_->set_options(o);
  for (int ts = 0; ts < 10; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  fault_->set_options(FaultOptions());
  ASSERT_TRUE(fault_->Send(KvMessage(100)).ok());
  std::vector<int> ts = WaitForTimestamps(11);
  ASSERT_EQ(ts.size(), 11u);
  // The undelayed marker overtook delayed messages, and all arrived.
  EXPECT_NE(ts.back(), 100);
  std::sort(ts.begin(), ts.end());
  EXPECT_EQ(ts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100}));
  EXPECT_EQ(fault_->stats().delayed, 10);
}

TEST_F(FaultVanTest, ReorderSwapsWithNextMessageToSameRecipient) {
  FaultOptions o;
  o.reorder_probability = 1;
  fault_->set_options(o);
  // Every message is held until the next one overtakes it; the last one
  // has no successor and goes alone after reorder_max_hold.
  for (int ts = 0; ts < 5; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  EXPECT_EQ(WaitForTimestamps(5), (std::vector<int>{1, 0, 3, 2, 4}));
  EXPECT_EQ(fault_->stats().reordered, 3);
}

TEST_F(FaultVanTest, SameSeedInjectsSameFaults) {
  FaultOptions o;
  o.drop_probability = 0.5;
  o.seed = 42;
  fault_->set_options(o);
  for (int ts = 0; ts < 40; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  std::vector<int> first = SendMarkerAndCollect(100);
  EXPECT_GT(first.size(), 5u);
  EXPECT_LT(first.size(), 36u);

  fault_->Stop();
  receiver_->Stop();
  {
    absl::MutexLock lock(&mu_);
    received_.clear();
  }
  ASSERT_TRUE(StartPair(o).ok());
  for (int ts = 0; ts < 40; ++ts) ASSERT_TRUE(fault_->Send(KvMessage(ts)).ok());
  EXPECT_EQ(SendMarkerAndCollect(100), first);
}

TEST_F(FaultVanTest, SendFailsWhenStopped) {
  fault_->Stop();
  EXPECT_EQ(fault_->Send(KvMessage(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  fault_->Stop();  // idempotent
}

// Each kind that breaks a wire rule must be caught by the receiver's decoder.
class FaultVanCorruptTest : public FaultVanTest,
                            public ::testing::WithParamInterface<CorruptKind> {
};

TEST_P(FaultVanCorruptTest, DecoderRejectsCorruptMessages) {
  FaultOptions o;
  o.corrupt_probability = 1;
  o.corrupt_kinds = {GetParam()};
  fault_->set_options(o);
  for (int ts = 0; ts < 20; ++ts) {
    ASSERT_TRUE(fault_->Send(KvMessage(ts, /*with_lens=*/ts % 2 == 1)).ok());
  }
  EXPECT_EQ(SendMarkerAndCollect(100), std::vector<int>{100});
  EXPECT_EQ(fault_->stats().corrupted, 20);
  EXPECT_EQ(Rejected(receiver_metrics_), 20);
}

std::string KindName(const ::testing::TestParamInfo<CorruptKind>& info) {
  switch (info.param) {
    case CorruptKind::kBadDataType:
      return "BadDataType";
    case CorruptKind::kTruncateFrame:
      return "TruncateFrame";
    case CorruptKind::kMissingFrame:
      return "MissingFrame";
    case CorruptKind::kSpoofSender:
      return "SpoofSender";
    case CorruptKind::kBadKvCounts:
      return "BadKvCounts";
    default:
      return "Other";
  }
}

INSTANTIATE_TEST_SUITE_P(RejectedKinds, FaultVanCorruptTest,
                         ::testing::Values(CorruptKind::kBadDataType,
                                           CorruptKind::kTruncateFrame,
                                           CorruptKind::kMissingFrame,
                                           CorruptKind::kSpoofSender),
                         KindName);

// Counts of keys and values that disagree break a KV rule, which the KV
// layer checks (kv/kv_codec.h), not the van: the van delivers them.
TEST_F(FaultVanTest, BadKvCountsPassTheVanForTheKvLayer) {
  FaultOptions o;
  o.corrupt_probability = 1;
  o.corrupt_kinds = {CorruptKind::kBadKvCounts};
  fault_->set_options(o);
  ASSERT_TRUE(fault_->Send(KvMessage(1)).ok());
  EXPECT_EQ(SendMarkerAndCollect(100), (std::vector<int>{1, 100}));
  EXPECT_EQ(fault_->stats().corrupted, 1);
  EXPECT_EQ(Rejected(receiver_metrics_), 0);
}

TEST_F(FaultVanTest, FlippedBytesAreRejectedOrDecodeToValidMessages) {
  FaultOptions o;
  o.corrupt_probability = 1;
  o.corrupt_kinds = {CorruptKind::kFlipDataByte, CorruptKind::kFlipMetaByte};
  fault_->set_options(o);
  constexpr int kSent = 200;
  constexpr int kMarker = 1 << 20;
  for (int ts = 0; ts < kSent; ++ts) {
    ASSERT_TRUE(fault_->Send(KvMessage(ts, ts % 2 == 1)).ok());
  }
  // A flipped meta may name another recipient, which the sender cannot
  // route; everything else arrives, accepted or rejected.
  absl::StatusOr<double> unroutable = sender_metrics_.Value(
      "petrel_van_messages_rejected_total", {{"reason", "no_route"}});
  int64_t lost = unroutable.ok() ? static_cast<int64_t>(*unroutable) : 0;
  std::vector<int> ts = SendMarkerAndCollect(kMarker);
  EXPECT_EQ(
      static_cast<int64_t>(ts.size()) + Rejected(receiver_metrics_) + lost,
      kSent + 1);
  EXPECT_GT(Rejected(receiver_metrics_), 0);
  // Whatever was accepted satisfies the decoder's promises.
  absl::MutexLock lock(&mu_);
  for (const Message& m : received_) {
    ASSERT_EQ(m.meta.data_types_size(), static_cast<int>(m.data.size()));
    for (size_t i = 0; i < m.data.size(); ++i) {
      size_t elem = DataTypeSize(m.meta.data_types(static_cast<int>(i)));
      ASSERT_GT(elem, 0u);
      EXPECT_EQ(m.data[i].size() % elem, 0u);
    }
    EXPECT_EQ(m.meta.recipient(), kReceiverId);
  }
}

}  // namespace
}  // namespace petrel

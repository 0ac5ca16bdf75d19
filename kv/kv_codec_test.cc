#include "kv/kv_codec.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "van/testing/kv_messages.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMaxBytes = int64_t{4} << 30;  // the van's default limit

Message KvMessage(std::vector<uint64_t> keys, std::vector<float> vals) {
  return WithKvData(Message(), std::move(keys), std::move(vals));
}

Message KvWithLens(std::vector<uint64_t> keys, std::vector<float> vals,
                   std::vector<int32_t> lens) {
  Message m = KvMessage(std::move(keys), std::move(vals));
  m.AddData(SArray<int32_t>(std::move(lens)));
  return m;
}

absl::Status Check(const Message& m) {
  return CheckKvLayout(m.meta, m.data, kMaxBytes);
}

// A push of key 7 carrying values [offset, offset + 3) of `total`.
Message KeySlice(int64_t offset, int64_t total) {
  return WithKeySlice(Message(), offset, total);
}

// A pull answer (a response): frames values[, lens], no keys.
Message Answer(std::vector<float> vals, std::vector<int32_t> lens = {},
               bool with_lens = false) {
  Message m;
  m.meta.set_kv(true);
  m.meta.set_pull(true);
  m.AddData(SArray<float>(std::move(vals)));
  if (with_lens || !lens.empty()) m.AddData(SArray<int32_t>(std::move(lens)));
  return m;
}

void ExpectInvalid(const absl::Status& s, const char* substr) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(substr));
}

TEST(KvCodecTest, AcceptsWellFormedKv) {
  EXPECT_TRUE(Check(KvMessage({1, 2}, {1, 2, 3, 4})).ok());
  EXPECT_TRUE(Check(KvMessage({1, 2}, {})).ok());
  EXPECT_TRUE(Check(KvMessage({}, {})).ok());
  Message keys_only;
  keys_only.meta.set_kv(true);
  keys_only.meta.set_request(true);
  keys_only.AddData(SArray<uint64_t>{1, 2});
  EXPECT_TRUE(Check(keys_only).ok());
  EXPECT_TRUE(Check(KvWithLens({1, 2, 3}, {1, 2, 3}, {0, 1, 2})).ok());
}

TEST(KvCodecTest, RejectsAMessageThatIsNotKv) {
  Message m = KvMessage({1}, {1});
  m.meta.set_kv(false);
  ExpectInvalid(Check(m), "not a key-value message");
}

TEST(KvCodecTest, RejectsFirstFrameNotUint64OrMissing) {
  Message m;
  m.meta.set_kv(true);
  m.meta.set_request(true);
  m.AddData(SArray<int64_t>{1, 2});
  m.AddData(SArray<float>{1, 2});
  ExpectInvalid(Check(m), "keys(uint64)");
  Message none;
  none.meta.set_kv(true);
  none.meta.set_request(true);
  ExpectInvalid(Check(none), "keys(uint64)");
}

TEST(KvCodecTest, RejectsMoreThanThreeFrames) {
  Message m = KvWithLens({1}, {1}, {1});
  m.AddData(SArray<int32_t>{1});
  ExpectInvalid(Check(m), "keys(uint64)");
}

TEST(KvCodecTest, RejectsDataTypesThatDoNotMatchTheFrames) {
  Message m = KvMessage({1}, {1});
  m.meta.add_data_types(pb::DATA_TYPE_INT32);  // 3 types, 2 frames
  ExpectInvalid(Check(m), "keys(uint64)");
}

TEST(KvCodecTest, RejectsLensFrameNotInt32) {
  Message m = KvMessage({1, 2}, {1, 2});
  m.AddData(SArray<int64_t>{1, 1});
  ExpectInvalid(Check(m), "int32");
}

TEST(KvCodecTest, RejectsLensCountMismatch) {
  ExpectInvalid(Check(KvWithLens({1, 2}, {1, 2}, {2})), "1 lens for 2 keys");
}

TEST(KvCodecTest, RejectsNegativeLength) {
  ExpectInvalid(Check(KvWithLens({1, 2}, {1, 2}, {3, -1})),
                "negative length -1");
}

TEST(KvCodecTest, RejectsLensSumMismatch) {
  ExpectInvalid(Check(KvWithLens({1, 2}, {1, 2, 3}, {1, 1})),
                "lens sum to 2 but 3");
}

TEST(KvCodecTest, RejectsValuesNotDividingKeys) {
  ExpectInvalid(Check(KvMessage({1, 2}, {1, 2, 3})), "3 values do not divide");
  ExpectInvalid(Check(KvMessage({}, {1})), "1 values do not divide");
}

TEST(KvCodecTest, AcceptsKeySlicesWithinTheirKey) {
  EXPECT_TRUE(Check(KeySlice(0, 3)).ok());
  EXPECT_TRUE(Check(KeySlice(97, 100)).ok());
}

TEST(KvCodecTest, RejectsKeySlicesThatDoNotFit) {
  // Past the end, negative, an offset without a total, a key larger than
  // the message limit.
  std::vector<Message> bad = {KeySlice(98, 100), KeySlice(-1, 100),
                              KeySlice(5, 0), KeySlice(0, int64_t{1} << 40)};
  Message two_keys = KvMessage({7, 8}, {1, 2});
  two_keys.meta.set_push(true);
  two_keys.meta.set_value_total(10);
  bad.push_back(two_keys);
  Message pull = KeySlice(0, 10);
  pull.meta.set_pull(true);
  bad.push_back(pull);
  Message not_push = KeySlice(0, 10);
  not_push.meta.set_push(false);
  bad.push_back(not_push);
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectInvalid(Check(bad[i]), "key slice");
  }
  // The limit is the caller's.
  ExpectInvalid(CheckKvLayout(KeySlice(0, 100).meta, KeySlice(0, 100).data,
                              /*max_message_bytes=*/399),
                "key slice");
  EXPECT_TRUE(CheckKvLayout(KeySlice(0, 100).meta, KeySlice(0, 100).data,
                            /*max_message_bytes=*/400)
                  .ok());
}

TEST(KvCodecTest, CheckKvFramesRejectsValuesOfAnotherType) {
  Message m = KvMessage({1}, {1});
  EXPECT_TRUE(CheckKvFrames(m, pb::DATA_TYPE_FLOAT, kMaxBytes).ok());
  ExpectInvalid(CheckKvFrames(m, pb::DATA_TYPE_DOUBLE, kMaxBytes),
                "kv values of type");
  KVPairs<double> out;
  EXPECT_FALSE(DecodeKvPairs(m, kMaxBytes, &out).ok());
  EXPECT_TRUE(out.keys.empty());
}

TEST(KvCodecTest, DecodeKvPairsSharesTheFrames) {
  Message m = KvWithLens({1, 2}, {1, 2, 3}, {1, 2});
  KVPairs<float> out;
  ASSERT_TRUE(DecodeKvPairs(m, kMaxBytes, &out).ok());
  EXPECT_EQ(out.keys.ToVector(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(out.vals.ToVector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(out.lens.ToVector(), (std::vector<int>{1, 2}));
  EXPECT_EQ(static_cast<const void*>(out.keys.data()), m.data[0].data());
  EXPECT_EQ(static_cast<const void*>(out.vals.data()), m.data[1].data());
  EXPECT_EQ(static_cast<const void*>(out.lens.data()), m.data[2].data());
}

TEST(KvCodecTest, AcceptsWellFormedAnswers) {
  EXPECT_TRUE(Check(Answer({1, 2, 3, 4})).ok());
  EXPECT_TRUE(Check(Answer({})).ok());  // keys never pushed have no values
  EXPECT_TRUE(Check(Answer({1, 2, 3}, {0, 1, 2})).ok());
  EXPECT_TRUE(Check(Answer({}, {}, /*with_lens=*/true)).ok());
  EXPECT_TRUE(Check(Answer({}, {0, 0})).ok());
  // How many keys they are for is the worker's to check: any value count.
  EXPECT_TRUE(Check(Answer({1, 2, 3})).ok());
  Message doubles;
  doubles.meta.set_kv(true);
  doubles.AddData(SArray<double>{1, 2});
  EXPECT_TRUE(Check(doubles).ok());
}

TEST(KvCodecTest, RejectsAnswersOfAnotherLayout) {
  Message none;  // no values frame
  none.meta.set_kv(true);
  ExpectInvalid(Check(none), "values[, lens(int32)]");
  Message three = Answer({1, 2}, {1, 1});
  three.AddData(SArray<int32_t>{1});
  ExpectInvalid(Check(three), "values[, lens(int32)]");
  Message types = Answer({1});
  types.meta.add_data_types(pb::DATA_TYPE_INT32);  // 2 types, 1 frame
  ExpectInvalid(Check(types), "values[, lens(int32)]");
  // The version 3 answer, keys then values: the floats are no int32 lens.
  Message keys_back = KvMessage({1, 2}, {1, 2});
  keys_back.meta.set_request(false);
  ExpectInvalid(Check(keys_back), "lens frame is not int32");
  Message lens64 = Answer({1, 2});
  lens64.AddData(SArray<int64_t>{1, 1});
  ExpectInvalid(Check(lens64), "lens frame is not int32");
  ExpectInvalid(Check(Answer({1, 2}, {3, -1})), "negative length -1");
  ExpectInvalid(Check(Answer({1, 2, 3}, {1, 1})), "lens sum to 2 but 3");
  Message slice = Answer({1, 2});
  slice.meta.set_value_total(10);
  ExpectInvalid(Check(slice), "no key slice");
}

TEST(KvCodecTest, CheckKvFramesReadsAnAnswersValuesFromFrameZero) {
  Message m = Answer({1, 2}, {1, 1});
  EXPECT_TRUE(CheckKvFrames(m, pb::DATA_TYPE_FLOAT, kMaxBytes).ok());
  ExpectInvalid(CheckKvFrames(m, pb::DATA_TYPE_DOUBLE, kMaxBytes),
                "kv values of type");
  // An answer has no keys: DecodeKvPairs reads requests only.
  KVPairs<float> out;
  ExpectInvalid(DecodeKvPairs(m, kMaxBytes, &out), "no keys");
  EXPECT_TRUE(out.vals.empty());
}

TEST(KvCodecTest, RequestMetaRoundTrips) {
  KVMeta kv;
  kv.cmd = 3;
  kv.push = true;
  kv.pull = true;
  kv.table_id = 4;
  kv.clock = 17;
  kv.clock_advance = true;
  kv.value_offset = 5;
  kv.value_total = 50;
  pb::Meta meta;
  EncodeKvRequest(kv, &meta);
  meta.set_sender(9);
  meta.set_timestamp(11);
  meta.set_customer_id(2);
  meta.set_part(1);
  EXPECT_TRUE(meta.kv());
  KVMeta back = DecodeKvMeta(meta);
  EXPECT_EQ(back.cmd, 3);
  EXPECT_TRUE(back.push && back.pull && back.clock_advance);
  EXPECT_EQ(back.table_id, 4);
  EXPECT_EQ(back.clock, 17);
  EXPECT_EQ(back.value_offset, 5);
  EXPECT_EQ(back.value_total, 50);
  ReplyAddress to = back.reply_address();
  EXPECT_EQ(to.sender, 9);
  EXPECT_EQ(to.timestamp, 11);
  EXPECT_EQ(to.customer_id, 2);
  EXPECT_EQ(to.part, 1);
}

TEST(KvCodecTest, ResponseCarriesTheRequestsKvFields) {
  KVMeta request;
  request.cmd = 6;
  request.pull = true;
  request.table_id = 2;
  pb::Meta response;
  EncodeKvResponse(request, /*min_clock=*/8, &response);
  EXPECT_TRUE(response.kv());
  EXPECT_TRUE(response.pull());
  EXPECT_FALSE(response.push());
  EXPECT_EQ(response.head(), 6);
  EXPECT_EQ(response.table_id(), 2);
  EXPECT_EQ(response.min_clock(), 8);
  EXPECT_TRUE(DecodeKvStatus(response).ok());
  request.pull = false;
  request.push = true;
  pb::Meta ack;
  EncodeKvResponse(request, 0, &ack);
  EXPECT_FALSE(ack.kv());  // no data frames
}

TEST(KvCodecTest, ErrorsTravelAsTypedStatus) {
  KVMeta request;
  request.push = true;
  pb::Meta response;
  EncodeKvError(request, absl::NotFoundError("no table 3"), &response);
  EXPECT_FALSE(response.kv());
  EXPECT_TRUE(response.body().empty());
  EXPECT_EQ(DecodeKvStatus(response), absl::NotFoundError("no table 3"));
}

TEST(KvCodecTest, UnknownStatusCodesReadAsInternal) {
  for (int code : {-1, 17, 1000, INT32_MIN, INT32_MAX}) {
    SCOPED_TRACE(code);
    pb::Meta response;
    response.set_status_code(code);
    response.set_status_message("odd");
    absl::Status s = DecodeKvStatus(response);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_THAT(s.message(), HasSubstr("odd"));
  }
  pb::Meta last;
  last.set_status_code(static_cast<int>(absl::StatusCode::kUnauthenticated));
  EXPECT_EQ(DecodeKvStatus(last).code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace petrel

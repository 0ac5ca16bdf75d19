// KVServer and KVWorker against peers that break the KV protocol: messages
// that pass the van but not kv_codec are dropped and counted, and a
// server's error reaches Wait with its code.
#include "kv/kv_server.h"

#include <functional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"
#include "van/customer.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr char kRejected[] = "petrel_van_messages_rejected_total";

double KvRejects(MetricsRegistry* metrics) {
  absl::StatusOr<double> v =
      metrics->Value(kRejected, {{"reason", kKvRejectReason}});
  return v.ok() ? *v : 0;
}

LocalClusterOptions Nodes() {
  LocalClusterOptions o;
  o.num_servers = 1;
  o.num_workers = 1;
  return o;
}

// A kv request (pull of keys 1, 2) as a raw Customer would send it.
Message KvRequest(int recipient, int timestamp) {
  KVMeta kv;
  kv.push = true;
  Message msg;
  msg.meta.set_recipient(recipient);
  msg.meta.set_timestamp(timestamp);
  EncodeKvRequest(kv, &msg.meta);
  msg.AddData(SArray<Key>{1, 2});
  msg.AddData(SArray<float>{1, 2});
  return msg;
}

TEST(KVServerTest, DropsAndCountsRequestsThatBreakTheKvLayout) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<KVMeta> handled;
  KVServer<float> server(0, cluster.server(0));
  KVStoreHandler<float> store;
  server.set_request_handler(
      [&](const KVMeta& meta, const KVPairs<float>& d, KVServer<float>* s) {
        handled.push_back(meta);
        store(meta, d, s);
      });
  ASSERT_TRUE(server.Start().ok());
  Customer raw(0, 1, cluster.worker(0));
  ASSERT_TRUE(raw.Start().ok());
  const int server_id = ServerRankToId(0);
  // Lens that do not sum to the values, then values of another type, then
  // a good push: requests of one customer are handled in order, so once
  // the good one is answered the bad ones were seen.
  int bad_lens = raw.NewRequest({server_id});
  Message lens = KvRequest(server_id, bad_lens);
  lens.AddData(SArray<int32_t>{1, 5});
  ASSERT_TRUE(raw.SendRequest(std::move(lens)).ok());
  int bad_type = raw.NewRequest({server_id});
  Message type = KvRequest(server_id, bad_type);
  type.data[1] = SArray<double>{1, 2}.buffer();
  type.meta.set_data_types(1, pb::DATA_TYPE_DOUBLE);
  ASSERT_TRUE(raw.SendRequest(std::move(type)).ok());
  int good = raw.NewRequest({server_id});
  ASSERT_TRUE(raw.SendRequest(KvRequest(server_id, good)).ok());
  ASSERT_TRUE(raw.Wait(good, absl::Seconds(10)).ok());
  EXPECT_EQ(KvRejects(cluster.server_metrics(0)), 2);
  ASSERT_EQ(handled.size(), 1u);
  EXPECT_EQ(handled[0].timestamp, good);
  EXPECT_FALSE(raw.IsComplete(bad_lens));
  raw.Stop();
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVStoreHandlerTest, RejectsAPushOfAnotherWidthWhole) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVServer<float> server(0, cluster.server(0));
  KVStoreHandler<float> store;
  server.set_request_handler(std::ref(store));
  ASSERT_TRUE(server.Start().ok());
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  const absl::Duration deadline = absl::Seconds(10);
  ASSERT_TRUE(
      kv.Wait(kv.Push(SArray<Key>{1}, SArray<float>{1, 2}), deadline).ok());
  // Key 2 is new, but key 1 has 2 values, not 3: nothing is stored.
  absl::Status s = kv.Wait(
      kv.Push(SArray<Key>{1, 2}, SArray<float>{5, 5, 5, 6, 6, 6}), deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("key 1 has 2 values in the store, push "
                                     "has 3"));
  SArray<float> vals;
  SArray<int> lens;
  ASSERT_TRUE(kv.Wait(kv.Pull(SArray<Key>{1, 2}, &vals, &lens), deadline).ok());
  EXPECT_EQ(vals.ToVector(), (std::vector<float>{1, 2}));
  EXPECT_EQ(lens.ToVector(), (std::vector<int>{2, 0}));
  EXPECT_EQ(store.num_keys(), 1u);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVStoreHandlerTest, SumsDuplicatesAndRejectsWholeAfterASecondWidth) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVServer<float> server(0, cluster.server(0));
  KVStoreHandler<float> store;
  server.set_request_handler(std::ref(store));
  ASSERT_TRUE(server.Start().ok());
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  const absl::Duration deadline = absl::Seconds(10);
  // One width stored (acknowledged before applied), duplicates each summed.
  ASSERT_TRUE(
      kv.Wait(kv.Push(SArray<Key>{1, 2}, SArray<float>{1, 2}), deadline).ok());
  ASSERT_TRUE(kv.Wait(kv.Push(SArray<Key>{1, 1, 3}, SArray<float>{10, 20, 30}),
                      deadline)
                  .ok());
  // A second width, then a push of it that key 1 (one value) rejects: no
  // key of it is stored, key 5 included.
  ASSERT_TRUE(
      kv.Wait(kv.Push(SArray<Key>{4}, SArray<float>{4, 4}), deadline).ok());
  absl::Status s =
      kv.Wait(kv.Push(SArray<Key>{5, 1}, SArray<float>{5, 5, 6, 6}), deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("key 1 has 1 values in the store, push "
                                     "has 2"));
  SArray<float> vals;
  SArray<int> lens;
  ASSERT_TRUE(
      kv.Wait(kv.Pull(SArray<Key>{1, 2, 3, 4, 5}, &vals, &lens), deadline)
          .ok());
  EXPECT_EQ(vals.ToVector(), (std::vector<float>{31, 2, 30, 4, 4}));
  EXPECT_EQ(lens.ToVector(), (std::vector<int>{1, 1, 1, 2, 0}));
  EXPECT_EQ(store.num_keys(), 4u);
  EXPECT_TRUE(cluster.Finish().ok());
}

// A server that answers every pull with `answer` (addressing filled in).
class RawServer {
 public:
  RawServer(Postoffice* po, std::function<Message()> answer)
      : customer_(0, 0, po) {
    customer_.set_request_handler([this, answer](Message&& msg, bool) {
      customer_.SendResponse(ReplyAddressOf(msg.meta), answer()).IgnoreError();
    });
    EXPECT_TRUE(customer_.Start().ok());
  }

 private:
  Customer customer_;
};

Message PullAnswer(SArray<Key> keys, SArray<float> vals, SArray<int> lens) {
  Message m;
  m.meta.set_kv(true);
  m.meta.set_pull(true);
  m.AddData(keys);
  m.AddData(vals);
  if (!lens.empty()) m.AddData(lens);
  return m;
}

TEST(KVWorkerAnswersTest, MalformedPullAnswersFailTheRequestAndAreCounted) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  RawServer server(cluster.server(0), [] {
    return PullAnswer({1, 2}, {1, 2, 3}, {1, 1});  // lens sum to 2, 3 values
  });
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  SArray<float> out;
  absl::Status s = kv.Wait(kv.Pull(SArray<Key>{1, 2}, &out), absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("malformed answer from server"));
  EXPECT_EQ(KvRejects(cluster.worker_metrics(0)), 1);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVWorkerAnswersTest, ServerErrorsKeepTheirCode) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVServer<float> server(0, cluster.server(0));
  server.set_request_handler(
      [](const KVMeta& meta, const KVPairs<float>&, KVServer<float>* s) {
        s->ResponseError(meta, absl::NotFoundError("no table 3")).IgnoreError();
      });
  ASSERT_TRUE(server.Start().ok());
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  SArray<float> out;
  absl::Status s = kv.Wait(kv.Pull(SArray<Key>{1}, &out), absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr(": no table 3"));
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVWorkerAnswersTest, UnknownStatusCodesReadAsInternal) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  RawServer server(cluster.server(0), [] {
    Message m;
    m.meta.set_status_code(99);
    m.meta.set_status_message("odd");
    return m;
  });
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  absl::Status s =
      kv.Wait(kv.Push(SArray<Key>{1}, SArray<float>{1}), absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(s.message(), HasSubstr("unknown status code 99: odd"));
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel

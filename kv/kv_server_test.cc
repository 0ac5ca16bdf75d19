// KVServer and KVWorker against peers that break the KV protocol: messages
// that pass the van but not kv_codec are dropped and counted, and a
// server's error reaches Wait with its code.
#include "kv/kv_server.h"

#include <functional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "cluster/customer.h"
#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"

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

// A kv request (push to keys 1, 2) as a raw Customer would send it.
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
  KVStoreHandler<float> store;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  KVServer<float> server(0, cluster.server(0));
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

// Wire version 4: a pull answer carries the values of the keys asked, in
// their order, and no keys; lens only when asked for variable lengths.
TEST(KVServerTest, AnswersAPullWithValuesOnly) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVServer<float> server(0, cluster.server(0));
  server.set_request_handler(
      [](const KVMeta& meta, const KVPairs<float>& d, KVServer<float>* s) {
        KVPairs<float> out;
        out.keys = d.keys;  // not sent
        out.vals = SArray<float>(d.keys.size());
        for (size_t i = 0; i < d.keys.size(); ++i) {
          out.vals[i] = static_cast<float>(d.keys[i]) * 10;
        }
        if (meta.cmd == 1) out.lens = SArray<int>(d.keys.size(), 1);
        s->Response(meta, out).IgnoreError();
      });
  ASSERT_TRUE(server.Start().ok());
  absl::Mutex mu;
  std::vector<Message> answers;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  Customer raw(0, 1, cluster.worker(0));
  raw.set_response_handler([&](Message&& m) {
    absl::MutexLock lock(&mu);
    answers.push_back(std::move(m));
  });
  ASSERT_TRUE(raw.Start().ok());
  const int server_id = ServerRankToId(0);
  for (int cmd : {0, 1}) {
    KVMeta kv;
    kv.pull = true;
    kv.cmd = cmd;
    Message msg;
    msg.meta.set_recipient(server_id);
    msg.meta.set_timestamp(raw.NewRequest({server_id}));
    EncodeKvRequest(kv, &msg.meta);
    msg.AddData(SArray<Key>{3, 1, 2});
    const int ts = msg.meta.timestamp();
    ASSERT_TRUE(raw.SendRequest(std::move(msg)).ok());
    ASSERT_TRUE(raw.Wait(ts, absl::Seconds(10)).ok());
  }
  raw.Stop();
  std::vector<Message> got;
  {
    absl::MutexLock lock(&mu);
    got.swap(answers);
  }
  ASSERT_EQ(got.size(), 2u);
  for (const Message& m : got) {
    EXPECT_TRUE(m.meta.kv());
    EXPECT_FALSE(m.meta.request());
    ASSERT_EQ(m.data.size(), m.meta.head() == 1 ? 2u : 1u);
    EXPECT_EQ(m.meta.data_types(0), pb::DATA_TYPE_FLOAT);
    EXPECT_EQ(SArray<float>(m.data[0]).ToVector(),
              (std::vector<float>{30, 10, 20}));
    if (m.meta.head() == 1) {
      EXPECT_EQ(m.meta.data_types(1), pb::DATA_TYPE_INT32);
      EXPECT_EQ(SArray<int>(m.data[1]).ToVector(), (std::vector<int>{1, 1, 1}));
    }
    EXPECT_TRUE(CheckKvFrames(m, pb::DATA_TYPE_FLOAT, int64_t{1} << 30).ok());
  }
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVStoreHandlerTest, RejectsAPushOfAnotherWidthWhole) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVStoreHandler<float> store;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  KVServer<float> server(0, cluster.server(0));
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

// A worker of another value type gets InvalidArgument naming both types,
// for a push (the server's check) and a pull (the worker's check of the
// answer), and nothing it sent is applied or reinterpreted.
TEST(KVServerTest, RefusesValuesOfAnotherTypeWithAnError) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVStoreHandler<float> store;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  KVServer<float> server(0, cluster.server(0));
  server.set_request_handler(std::ref(store));
  ASSERT_TRUE(server.Start().ok());
  KVWorker<float> floats(0, 0, cluster.worker(0));
  KVWorker<int64_t> ints(0, 1, cluster.worker(0));
  KVWorker<double> doubles(0, 2, cluster.worker(0));
  ASSERT_TRUE(floats.Start().ok());
  ASSERT_TRUE(ints.Start().ok());
  ASSERT_TRUE(doubles.Start().ok());
  const absl::Duration deadline = absl::Seconds(10);
  ASSERT_TRUE(
      floats.Wait(floats.Push(SArray<Key>{1}, SArray<float>{1.5f}), deadline)
          .ok());
  absl::Status s = ints.Wait(
      ints.Push(SArray<Key>{1, 2}, SArray<int64_t>{int64_t{1} << 40, 7}),
      deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(),
              HasSubstr("kv values of type int64, expected float32"));
  SArray<double> wide;
  s = doubles.Wait(doubles.PushPull(SArray<Key>{1}, SArray<double>{2.0}, &wide),
                   deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("float64, expected float32"));
  s = doubles.Wait(doubles.Pull(SArray<Key>{1}, &wide), deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("float32, expected float64"));
  SArray<float> vals;
  ASSERT_TRUE(floats.Wait(floats.Pull(SArray<Key>{1}, &vals), deadline).ok());
  EXPECT_EQ(vals.ToVector(), (std::vector<float>{1.5f}));
  EXPECT_EQ(store.num_keys(), 1u);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVStoreHandlerTest, SumsDuplicatesAndRejectsWholeAfterASecondWidth) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVStoreHandler<float> store;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  KVServer<float> server(0, cluster.server(0));
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

// A pull answer as wire version 4 lays it out: values[, lens], no keys.
Message PullAnswer(SArray<float> vals, SArray<int> lens) {
  Message m;
  m.meta.set_kv(true);
  m.meta.set_pull(true);
  m.AddData(vals);
  if (!lens.empty()) m.AddData(lens);
  return m;
}

// Pulls keys 1, 2 from a server answering `answer`; expects a malformed
// answer error naming `detail`, counted once.
void ExpectMalformedAnswer(std::function<Message()> answer,
                           const char* detail) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  RawServer server(cluster.server(0), std::move(answer));
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  SArray<float> out;
  SArray<int> lens;
  absl::Status s =
      kv.Wait(kv.Pull(SArray<Key>{1, 2}, &out, &lens), absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("malformed answer from server"));
  EXPECT_THAT(s.message(), HasSubstr(detail));
  EXPECT_EQ(KvRejects(cluster.worker_metrics(0)), 1);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVWorkerAnswersTest, MalformedPullAnswersFailTheRequestAndAreCounted) {
  // Lens that sum to 2 with 3 values: the layout check.
  ExpectMalformedAnswer(
      [] {
        return PullAnswer({1, 2, 3}, {1, 1});
      },
      "lens sum to 2 but 3");
}

TEST(KVWorkerAnswersTest, AnswersWhoseCountsDoNotFitTheKeysAskedFail) {
  // 3 values for the 2 keys asked; 3 lens for 2 keys.
  ExpectMalformedAnswer(
      [] {
        return PullAnswer({1, 2, 3}, {});
      },
      "sent 3 values for 2 keys asked");
  ExpectMalformedAnswer(
      [] {
        return PullAnswer({1, 2, 3}, {1, 1, 1});
      },
      "sent 3 lens for 2 keys asked");
}

TEST(KVWorkerAnswersTest, AnswersStillCarryingTheKeysAreRejected) {
  // A version 3 answer (keys, values), had its version matched.
  ExpectMalformedAnswer(
      [] {
        Message m;
        m.meta.set_kv(true);
        m.meta.set_pull(true);
        m.AddData(SArray<Key>{1, 2});
        m.AddData(SArray<float>{1, 2});
        return m;
      },
      "lens frame is not int32");
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

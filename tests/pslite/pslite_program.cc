// A PS-Lite-style program built against Petrel's "ps/ps.h": one binary for
// every role (DMLC_ROLE), started by tests/integration/dmlc_local.sh as
// PS-Lite's tests/local.sh starts its test programs. argv[1] picks what it
// checks; each worker prints "ok=true" once its checks passed (a failed
// CHECK aborts the process, which fails the run):
//   connection      Start and Finalize, nothing else
//   simple_app      SimpleApp requests to a group that holds the sender,
//                   their handles and responses, counted on every node
//   kv              KVServerDefaultHandle: repeated pushes summed exactly,
//                   Pull, ZPush/ZPull, PushPull, callbacks, Barrier
//   handle          a request handle of its own, set after Start: lens,
//                   cmd, pull answers, a handle that answers later
//   customers       two worker threads, each its own Start(customer_id),
//                   KVWorker and Finalize: two workers of the job in one
//                   process (run with DMLC_LOCAL_WORKER_PROCESSES=1)
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ps/ps.h"

namespace {

using ps::Key;
using ps::KVMeta;
using ps::KVPairs;
using ps::KVServer;
using ps::KVWorker;
using ps::SArray;

void PrintOk() {
  std::printf("ok=true rank=%d\n", ps::MyRank());
  std::fflush(stdout);
}

// Keys spread over the whole key space, distinct per worker rank.
std::vector<Key> SpreadKeys(int n, int rank) {
  std::vector<Key> keys(n);
  for (int i = 0; i < n; ++i) keys[i] = ps::kMaxKey / n * i + rank;
  return keys;
}

int Connection() {
  ps::Start(0);
  ps::Finalize(0, true);
  if (ps::IsWorker()) PrintOk();
  return 0;
}

int SimpleApp() {
  const int n = 50;
  std::atomic<int> handled{0};
  std::atomic<int> answered{0};
  ps::SimpleApp app(0);
  app.set_request_handle([&](const ps::SimpleData& req, ps::SimpleApp* a) {
    CHECK_EQ(req.head, 3);
    CHECK_EQ(req.body, "ping");
    a->Response(req, "pong");
    ++handled;
  });
  app.set_response_handle([&](const ps::SimpleData& res, ps::SimpleApp*) {
    CHECK_EQ(res.body, "pong");
    ++answered;
  });
  ps::Start(0);
  const int everyone = ps::kScheduler + ps::kServerGroup + ps::kWorkerGroup;
  const int nodes = 1 + ps::NumServers() + ps::NumWorkers();
  if (ps::IsScheduler()) {
    std::vector<int> ts;
    for (int i = 0; i < n; ++i) ts.push_back(app.Request(3, "ping", everyone));
    for (int t : ts) app.Wait(t);
    CHECK_EQ(answered.load(), n * nodes);
  }
  ps::Finalize(0, true);
  CHECK_EQ(handled.load(), n);  // every node, the scheduler too
  if (ps::IsWorker()) PrintOk();
  return 0;
}

void StartDefaultServer() {
  if (!ps::IsServer()) return;
  auto* server = new KVServer<float>(0);
  server->set_request_handle(ps::KVServerDefaultHandle<float>());
  ps::RegisterExitCallback([server] { delete server; });
}

void CheckSums(const std::vector<float>& got, const std::vector<float>& vals,
               float times) {
  CHECK_EQ(got.size(), vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    CHECK_EQ(got[i], vals[i] * times) << "key " << i;
  }
}

void RunKvWorker() {
  KVWorker<float> kv(0, 0);
  const int rank = ps::MyRank();
  const std::vector<Key> keys = SpreadKeys(1000, rank);
  std::vector<float> vals(keys.size());
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = (i * 7 + rank) % 100;

  const int repeat = 30;
  std::vector<int> ts;
  std::atomic<int> callbacks{0};
  for (int i = 0; i < repeat; ++i) {
    ts.push_back(kv.Push(keys, vals, {}, 0, [&callbacks] { ++callbacks; }));
    if (i > 5) kv.Wait(ts[ts.size() - 5]);
  }
  for (int t : ts) kv.Wait(t);
  CHECK_EQ(callbacks.load(), repeat);
  std::vector<float> got;
  kv.Wait(kv.Pull(keys, &got));
  CheckSums(got, vals, repeat);

  // The zero-copy forms, and a pull into an array of the right size.
  SArray<Key> zkeys(keys);
  SArray<float> zvals(vals);
  kv.Wait(kv.ZPush(zkeys, zvals));
  SArray<float> zgot(keys.size(), -1.0f);
  float* in_place = zgot.data();
  kv.Wait(kv.ZPull(zkeys, &zgot));
  CHECK_EQ(zgot.data(), in_place);
  for (size_t i = 0; i < keys.size(); ++i) {
    CHECK_EQ(zgot[i], vals[i] * (repeat + 1));
  }
  // PushPull returns the values after this push.
  std::vector<float> after;
  kv.Wait(kv.PushPull(keys, vals, &after));
  CheckSums(after, vals, repeat + 2);

  // Every worker pushed its own keys; after a barrier each sees the others'.
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
  const int other = (rank + 1) % ps::NumWorkers();
  std::vector<float> theirs;
  kv.Wait(kv.Pull(SpreadKeys(1000, other), &theirs));
  for (size_t i = 0; i < theirs.size(); ++i) {
    CHECK_EQ(theirs[i], ((i * 7 + other) % 100) * (repeat + 2.0f));
  }
}

int Kv() {
  StartDefaultServer();
  ps::Start(0);
  CHECK_EQ(ps::Postoffice::Get()->GetServerKeyRanges().size(),
           static_cast<size_t>(ps::NumServers()));
  if (ps::IsWorker()) RunKvWorker();
  ps::Finalize(0, true);
  if (ps::IsWorker()) PrintOk();
  return 0;
}

// Keeps each key's values as pushed (replaced, not summed), with their
// count; a pull with cmd 2 answers from another thread.
class RowHandle {
 public:
  void operator()(const KVMeta& meta, const KVPairs<float>& data,
                  KVServer<float>* server) {
    if (meta.push) Store(data);
    if (!meta.pull) {
      server->Response(meta);
      return;
    }
    KVPairs<float> res;
    res.keys = data.keys;
    for (Key key : data.keys) {
      const std::vector<float>& row = rows_[key];
      res.lens.push_back(static_cast<int>(row.size()));
      for (float v : row) res.vals.push_back(v + meta.cmd * 1000);
    }
    if (meta.cmd == 2) {
      std::thread([server, meta, res] {
        server->Response(meta, res);
      }).detach();
    } else {
      server->Response(meta, res);
    }
  }

 private:
  void Store(const KVPairs<float>& data) {
    size_t at = 0;
    for (size_t i = 0; i < data.keys.size(); ++i) {
      const size_t n = data.lens.empty() ? data.vals.size() / data.keys.size()
                                         : data.lens[i];
      rows_[data.keys[i]].assign(data.vals.begin() + at,
                                 data.vals.begin() + at + n);
      at += n;
    }
  }

  std::map<Key, std::vector<float>> rows_;
};

void RunHandleWorker() {
  KVWorker<float> kv(0);
  const int rank = ps::MyRank();
  std::vector<Key> keys = {Key{3} + rank * 1000, Key{1} << 40 | rank,
                           ps::kMaxKey - rank};
  std::vector<int> lens = {1, 3, 2};
  std::vector<float> vals = {1, 2, 3, 4, 5, 6};
  kv.Wait(kv.Push(keys, vals, lens));
  for (int cmd : {0, 2}) {
    std::vector<float> got;
    std::vector<int> got_lens;
    kv.Wait(kv.Pull(keys, &got, &got_lens, cmd));
    CHECK(got_lens == lens);
    CHECK_EQ(got.size(), vals.size());
    for (size_t i = 0; i < vals.size(); ++i) {
      CHECK_EQ(got[i], vals[i] + cmd * 1000);
    }
  }
}

int Handle() {
  ps::Start(0);
  KVServer<float>* server = nullptr;
  if (ps::IsServer()) {
    // After Start, as PS-Lite's benchmark does: requests that arrive first
    // are sent again until the handle is set.
    server = new KVServer<float>(0);
    server->set_request_handle(RowHandle());
  }
  if (ps::IsWorker()) RunHandleWorker();
  ps::Finalize(0, true);
  delete server;
  if (ps::IsWorker()) PrintOk();
  return 0;
}

void RunCustomer(int customer_id, std::atomic<int>* passed) {
  ps::Start(customer_id);
  KVWorker<float> kv(0, customer_id);
  const std::vector<Key> keys = SpreadKeys(500, ps::MyRank() * 2 + customer_id);
  const std::vector<float> vals(keys.size(), 1.0f + customer_id);
  for (int i = 0; i < 10; ++i) kv.Wait(kv.Push(keys, vals));
  std::vector<float> got;
  kv.Wait(kv.Pull(keys, &got));
  CheckSums(got, vals, 10);
  ++*passed;
  ps::Finalize(customer_id, true);
}

int Customers() {
  StartDefaultServer();
  if (!ps::IsWorker()) {
    ps::Start(0);
    ps::Finalize(0, true);
    return 0;
  }
  std::atomic<int> passed{0};
  std::thread t0(RunCustomer, 0, &passed);
  std::thread t1(RunCustomer, 1, &passed);
  t0.join();
  t1.join();
  CHECK_EQ(passed.load(), 2);
  PrintOk();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "connection") return Connection();
  if (what == "simple_app") return SimpleApp();
  if (what == "kv") return Kv();
  if (what == "handle") return Handle();
  if (what == "customers") return Customers();
  std::fprintf(stderr,
               "usage: %s connection|simple_app|kv|handle|customers "
               "(with DMLC_ROLE and the other DMLC_* variables set)\n",
               argv[0]);
  return 2;
}

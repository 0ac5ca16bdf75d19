// Exactly-once over real TCP connections that drop and reconnect: a real
// petrel-scheduler and petrel-server, and a worker in this process (a
// NodeRuntime with the default CustomerOptions, so resends are on as in
// the daemons), with a TcpProxy in front of the server (requests) and one
// in front of the worker (answers). Between bursts of pushes the test
// injects faults while requests are in flight: it cuts the request path
// (requests lost), holds the answers and cuts (pushes applied but their
// acknowledgements lost), or holds the requests past the resend timeout
// (the server gets each request twice). Every push must be acknowledged,
// and the pulled sums must count each exactly once; the scheduler must not
// mistake a cut connection for a dead node.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/tcp_proxy.h"

namespace petrel {
namespace {

constexpr int kNumKeys = 64;
constexpr int kBurst = 8;
constexpr int kFaults = 6;
constexpr absl::Duration kTimeout = absl::Seconds(20);

// Waits until `done` holds, polling, at most `timeout`.
template <typename F>
bool WaitFor(F done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// The port a daemon bound, from its log line "... bound port N, ...".
absl::StatusOr<int> BoundPort(Subprocess* proc) {
  absl::StatusOr<std::string> line = proc->WaitForLine("bound port ", kTimeout);
  if (!line.ok()) return line.status();
  const size_t at = line->find("bound port ") + 11;
  int port = 0;
  if (!absl::SimpleAtoi(line->substr(at, line->find(',', at) - at), &port)) {
    return absl::InternalError("no port in '" + *line + "'");
  }
  return port;
}

int64_t Counter(MetricsRegistry* metrics, const char* name) {
  return metrics->GetCounter(name, "")->value();
}

TEST(TcpExactlyOnceTest, AcknowledgedPushesCountOnceAcrossCutConnections) {
  absl::StatusOr<std::unique_ptr<TcpProxy>> to_server = TcpProxy::Start();
  absl::StatusOr<std::unique_ptr<TcpProxy>> to_worker = TcpProxy::Start();
  ASSERT_TRUE(to_server.ok() && to_worker.ok());
  TcpProxy& ps = **to_server;
  TcpProxy& pw = **to_worker;

  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200"};
  o.scheduler_flags = {"--heartbeat_timeout_s=30"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server = cluster.StartNode(
      "petrel-server",
      {absl::StrCat("--advertise_port=", ps.port()), "--metrics_port=0"});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<int> server_port = BoundPort(*server);
  ASSERT_TRUE(server_port.ok()) << server_port.status() << cluster.Output();
  ps.set_target(*server_port);

  NodeSettings settings;
  settings.postoffice.role = pb::ROLE_WORKER;
  settings.postoffice.scheduler_host = "127.0.0.1";
  settings.postoffice.scheduler_port = cluster.scheduler_announce().port;
  settings.postoffice.advertise_host = "127.0.0.1";
  settings.postoffice.advertise_port = pw.port();
  settings.postoffice.heartbeat_interval = absl::Milliseconds(200);
  settings.postoffice.join_timeout = kTimeout;
  settings.van.bind_host = "127.0.0.1";
  NodeRuntime runtime(settings);
  Postoffice* po = runtime.postoffice();
  KVWorker<float> kv(0, 0, po);  // default options: resends on
  ASSERT_TRUE(kv.Start().ok());
  // Start joins, which needs the scheduler's answer through `pw`, whose
  // target (this node's port) is known once the van bound it.
  absl::Status started;
  std::thread starter([&] { started = runtime.Start(); });
  ASSERT_TRUE(WaitFor([&] { return po->port() != 0; }, kTimeout));
  pw.set_target(po->port());
  starter.join();
  ASSERT_TRUE(started.ok()) << started << cluster.Output();
  absl::StatusOr<Announce> ready = cluster.WaitReady(*server);
  ASSERT_TRUE(ready.ok()) << cluster.Output();

  SArray<Key> keys(kNumKeys);
  for (int k = 0; k < kNumKeys; ++k) keys[k] = static_cast<Key>(k);
  std::vector<double> expected(kNumKeys, 0);
  MetricsRegistry* metrics = runtime.metrics();
  for (int fault = 0; fault < kFaults; ++fault) {
    // Case 0 loses requests, case 1 acknowledgements of applied pushes, and
    // case 2 delivers every request twice.
    TcpProxy& proxy = fault % 3 == 1 ? pw : ps;
    const int64_t bytes_before = proxy.bytes();
    const int64_t resent_before =
        Counter(metrics, "petrel_customer_resent_total");
    proxy.set_hold(true);
    std::vector<int> pushes;
    for (int b = 0; b < kBurst; ++b) {
      SArray<float> vals(kNumKeys);
      for (int k = 0; k < kNumKeys; ++k) {
        vals[k] = static_cast<float>(1 + (fault * kBurst + b + k) % 5);
        expected[k] += vals[k];
      }
      pushes.push_back(kv.Push(keys, vals));
    }
    if (fault % 3 == 2) {  // held past the resend timeout
      ASSERT_TRUE(WaitFor(
          [&] {
            return Counter(metrics, "petrel_customer_resent_total") >
                   resent_before;
          },
          kTimeout));
    } else {  // cut with bytes in the proxy
      ASSERT_TRUE(
          WaitFor([&] { return proxy.bytes() > bytes_before; }, kTimeout));
      proxy.CutAll();
    }
    proxy.set_hold(false);
    for (int ts : pushes) {
      absl::Status s = kv.Wait(ts, kTimeout);
      ASSERT_TRUE(s.ok()) << "fault " << fault << ": " << s;
    }
  }

  SArray<float> got;
  absl::Status pulled = kv.Wait(kv.Pull(keys, &got), kTimeout);
  ASSERT_TRUE(pulled.ok()) << pulled;
  ASSERT_EQ(got.size(), static_cast<size_t>(kNumKeys));
  for (int k = 0; k < kNumKeys; ++k) {
    EXPECT_EQ(got[k], static_cast<float>(expected[k])) << "key " << k;
  }
  EXPECT_GE(ps.cuts() + pw.cuts(), kFaults / 3 * 2);
  EXPECT_GT(Counter(metrics, "petrel_customer_resent_total"), 0);
  absl::StatusOr<std::string> server_metrics =
      HttpGet(ready->metrics_port, "/metrics");
  ASSERT_TRUE(server_metrics.ok()) << server_metrics.status();
  EXPECT_GT(
      SumMetric(*server_metrics, "petrel_customer_duplicates_total", "")[""], 0)
      << "no request reached the server twice";

  ASSERT_TRUE(po->Finish(kTimeout).ok()) << cluster.Output();
  runtime.Stop();
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
  EXPECT_FALSE(absl::StrContains(cluster.Output(), "declared dead"))
      << cluster.Output();
}

}  // namespace
}  // namespace petrel

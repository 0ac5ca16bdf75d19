// Hostile input against the real daemons of a running job. The job has one
// server and two workers: petrel-worker --job=check and this test process
// (an in-process worker node running the same check job). The cluster forms,
// petrel-worker pushes and then waits at the workers' barrier for this
// process, which first attacks the scheduler, the server and petrel-worker:
// a raw ZeroMQ DEALER sends malformed messages (random bytes, truncated
// headers, huge declared sizes, too many frames, a wrong version, frame and
// KV counts that disagree, spoofed senders, unknown apps, wrong recipients)
// and a plain TCP client sends bytes that are not ZMTP. Afterwards the job
// completes with exact sums, each daemon's /metrics counts at least one
// reject per bad message, and every process exits 0. The test runs twice:
// with the cluster open, and with CURVE keys (the attacker then holds an
// authorized worker key; docs/security.md).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kv/kv_worker.h"
#include "tests/harness/cluster_keys.h"
#include "tests/harness/daemon_cluster.h"
#include "van/curve_keys.h"
#include "van/node_runtime.h"
#include "van/testing/wait_until.h"
#include "van/wire_codec.h"
#include "worker/check_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);
constexpr char kRejected[] = "petrel_van_messages_rejected_total";

using Frames = std::vector<std::string>;  // one multipart message

std::string Header(const pb::Meta& meta) {
  Buffer b = EncodeHeader(meta);
  return std::string(b.data(), b.size());
}

pb::Meta Request(int sender, int recipient, int app_id) {
  pb::Meta m;
  m.set_sender(sender);
  m.set_recipient(recipient);
  m.set_app_id(app_id);
  m.set_request(true);
  m.set_push(true);
  m.set_seq(1);
  return m;
}

std::string Zeros(size_t n) { return std::string(n, '\0'); }

// Messages the decoder must reject, before or at the addressing check.
std::vector<Frames> MalformedMessages(int target_id) {
  std::mt19937 rng(20261202);
  auto random = [&rng](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  const std::string h = Header(Request(9, target_id, 0));
  std::vector<Frames> out = {{random(1), random(100), random(7)},
                             {random(5000)},
                             {""},
                             {h.substr(0, 10)},
                             {h.substr(0, h.size() - 3)}};
  std::string huge = h;  // declares a 4 GiB meta
  for (int i = 8; i < 12; ++i) huge[i] = '\xff';
  out.push_back({huge});
  pb::Meta big = Request(9, target_id, 0);  // a 2 MiB meta, over the limit
  big.set_body(std::string(2 << 20, 'x'));
  out.push_back({Header(big)});
  Frames many = {h};  // 40 data frames, over --max_frames
  for (int i = 0; i < 40; ++i) many.push_back(Zeros(8));
  out.push_back(many);
  pb::Meta lots = Request(9, target_id, 0);  // declares 1000 frames
  for (int i = 0; i < 1000; ++i) lots.add_data_types(pb::DATA_TYPE_UINT64);
  out.push_back({Header(lots), Zeros(8)});
  std::string version = h;
  version[4] = 99;
  out.push_back({version});
  pb::Meta two = Request(9, target_id, 0);  // 2 data types, 1 frame
  two.add_data_types(pb::DATA_TYPE_UINT64);
  two.add_data_types(pb::DATA_TYPE_FLOAT);
  out.push_back({Header(two), Zeros(8)});
  pb::Meta odd = Request(9, target_id, 0);  // 13 bytes of uint64
  odd.add_data_types(pb::DATA_TYPE_UINT64);
  out.push_back({Header(odd), Zeros(13)});
  return out;
}

// Well-formed messages with lies in them.
std::vector<Frames> LyingMessages(int target_id) {
  std::vector<Frames> out;
  pb::Meta kv = Request(9, target_id, 0);  // 3 keys, 4 values
  kv.set_kv(true);
  kv.add_data_types(pb::DATA_TYPE_UINT64);
  kv.add_data_types(pb::DATA_TYPE_FLOAT);
  out.push_back({Header(kv), Zeros(24), Zeros(16)});
  // The one shape an unknown connection may send the scheduler, a join
  // request, but with KV frames that disagree.
  pb::Meta join = kv;
  join.set_sender(kEmptyNodeId);
  join.set_recipient(kSchedulerId);
  join.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  join.mutable_control()->add_nodes()->set_role(pb::ROLE_WORKER);
  out.push_back({Header(join), Zeros(24), Zeros(16)});
  out.push_back({Header(Request(8, target_id, 0))});  // spoofed server
  pb::Meta terminate;  // spoofed scheduler ending the job
  terminate.set_sender(kSchedulerId);
  terminate.set_recipient(target_id);
  terminate.mutable_control()->set_cmd(pb::COMMAND_TERMINATE);
  out.push_back({Header(terminate)});
  out.push_back({Header(Request(9, target_id, 77))});       // unknown app
  out.push_back({Header(Request(9, target_id + 100, 0))});  // wrong recipient
  pb::Meta negative = Request(9, target_id, 0);
  negative.set_timestamp(-5);
  out.push_back({Header(negative)});
  return out;
}

// Sends `messages` from a fresh DEALER; returns once they left (linger).
// With `keys`, the DEALER is a CURVE client of a node holding `node_key`.
void SendWithDealer(int port, const std::vector<Frames>& messages,
                    const CurveKeyPair* keys = nullptr,
                    const std::string& node_key = "") {
  void* ctx = zmq_ctx_new();
  void* dealer = zmq_socket(ctx, ZMQ_DEALER);
  int linger = 10000;
  zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof(linger));
  if (keys != nullptr) {
    ASSERT_TRUE(ConfigureCurveClient(dealer, *keys, node_key).ok());
  }
  std::string endpoint = absl::StrCat("tcp://127.0.0.1:", port);
  ASSERT_EQ(zmq_connect(dealer, endpoint.c_str()), 0);
  for (const Frames& frames : messages) {
    for (size_t i = 0; i < frames.size(); ++i) {
      int more = i + 1 < frames.size() ? ZMQ_SNDMORE : 0;
      ASSERT_GE(zmq_send(dealer, frames[i].data(), frames[i].size(), more), 0);
    }
  }
  zmq_close(dealer);
  zmq_ctx_term(ctx);  // waits for the queued messages to be sent
}

// A plain TCP client that writes `bytes` (not ZMTP) and hangs up.
void SendRawTcp(int port, const std::string& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_GT(write(fd, bytes.data(), bytes.size()), 0);
  close(fd);
}

// Polls /metrics until the rejects sum to `at_least`; returns them by reason.
std::map<std::string, double> AwaitRejects(int metrics_port, double at_least) {
  std::map<std::string, double> by_reason;
  WaitUntil(
      [&] {
        absl::StatusOr<std::string> text = HttpGet(metrics_port, "/metrics");
        if (!text.ok()) return false;
        by_reason = SumMetric(*text, kRejected, "reason");
        double total = 0;
        for (const auto& [reason, n] : by_reason) total += n;
        return total >= at_least;
      },
      kTimeout, /*poll_interval=*/absl::Milliseconds(50));
  return by_reason;
}

NodeSettings InProcessWorker(int scheduler_port, const CurveOptions& curve) {
  NodeSettings s;
  s.postoffice.role = pb::ROLE_WORKER;
  s.postoffice.scheduler_host = "127.0.0.1";
  s.postoffice.scheduler_port = scheduler_port;
  s.postoffice.advertise_host = "127.0.0.1";
  s.postoffice.num_servers = 1;
  s.postoffice.num_workers = 2;
  s.postoffice.join_timeout = kTimeout;
  s.van.bind_host = "127.0.0.1";
  s.van.curve = curve;
  return s;
}

struct Target {
  std::string name;
  Announce announce;
  int id;
  std::string key;  // with CURVE: the node's public key
};

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Without keys (the parameter false), and with CURVE on: then the attacker
// holds an authorized worker key (an insider; a stranger would not get past
// the handshake, curve_test shows), so the same messages reach the decoder.
class HostileInputTest : public ::testing::TestWithParam<bool> {};

TEST_P(HostileInputTest, DaemonsSurviveAndCountMalformedMessages) {
  const bool curve = GetParam();
  ClusterKeys keys({{"scheduler", "scheduler"},
                    {"server", "server"},
                    {"worker", "worker"},
                    {"worker2", "worker"},
                    {"insider", "worker"}});
  auto key_flags = [&](const std::string& name) {
    return curve ? keys.Flags(name) : std::vector<std::string>();
  };
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 1;
  o.num_workers = 2;
  o.flags = {"--metrics_port=0", "--join_timeout_s=60"};
  o.scheduler_flags = key_flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server =
      cluster.StartNode("petrel-server", key_flags("server"));
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker",
      Concat({"--job=check", "--timeout_s=60"}, key_flags("worker")));
  ASSERT_TRUE(server.ok() && worker.ok());
  NodeRuntime runtime(
      InProcessWorker(cluster.scheduler_announce().port,
                      curve ? keys.Options("worker2") : CurveOptions()));
  KVWorker<float> kv(0, 0, runtime.postoffice());
  ASSERT_TRUE(kv.Start().ok());
  absl::Status joined = runtime.Start();
  ASSERT_TRUE(joined.ok()) << joined << cluster.Output();
  absl::StatusOr<Announce> server_ready = cluster.WaitReady(*server);
  absl::StatusOr<Announce> worker_ready = cluster.WaitReady(*worker);
  ASSERT_TRUE(server_ready.ok() && worker_ready.ok()) << cluster.Output();

  std::vector<Target> targets = {
      {"scheduler", cluster.scheduler_announce(), kSchedulerId,
       keys.keys("scheduler").public_key},
      {"server", *server_ready, server_ready->id,
       keys.keys("server").public_key},
      {"worker", *worker_ready, worker_ready->id,
       keys.keys("worker").public_key}};
  std::mt19937 rng(7);
  std::string garbage(64 << 10, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  std::vector<size_t> sent;
  std::vector<size_t> expected;
  for (const Target& t : targets) {
    std::vector<Frames> bad = MalformedMessages(t.id);
    std::vector<Frames> lies = LyingMessages(t.id);
    bad.insert(bad.end(), lies.begin(), lies.end());
    SendRawTcp(t.announce.port, garbage);
    SendRawTcp(t.announce.port, "GET / HTTP/1.0\r\n\r\n");
    SendWithDealer(t.announce.port, bad,
                   curve ? &keys.keys("insider") : nullptr, t.key);
    sent.push_back(bad.size());
    // The scheduler answers the well-formed join request among the lies
    // with a REJECT (the cluster is complete) instead of dropping it.
    expected.push_back(t.id == kSchedulerId ? bad.size() - 1 : bad.size());
  }

  // The job still works: the check (barrier, exact sums) on both workers.
  CheckJobOptions check;
  check.timeout = kTimeout;
  absl::StatusOr<std::string> line =
      RunCheckJob(runtime.postoffice(), &kv, check);
  ASSERT_TRUE(line.ok()) << line.status() << cluster.Output();
  EXPECT_TRUE(absl::StrContains(*line, "ok=true"));
  EXPECT_TRUE((*worker)->WaitForLine("ok=true", kTimeout).ok())
      << cluster.Output();

  for (size_t i = 0; i < targets.size(); ++i) {
    std::map<std::string, double> rejects =
        AwaitRejects(targets[i].announce.metrics_port, expected[i]);
    double total = 0;
    std::string summary;
    for (const auto& [reason, n] : rejects) {
      total += n;
      absl::StrAppend(&summary, " ", reason, "=", n);
    }
    std::printf("%s: sent %zu bad messages; rejected:%s\n",
                targets[i].name.c_str(), sent[i], summary.c_str());
    EXPECT_GE(total, expected[i])
        << targets[i].name << "\n"
        << HttpGet(targets[i].announce.metrics_port, "/metrics").value_or("");
    for (const char* reason :
         {"invalid_argument", "resource_exhausted", "permission_denied"}) {
      EXPECT_GT(rejects[reason], 0) << targets[i].name << " " << reason;
    }
  }

  absl::Status finished = runtime.postoffice()->Finish(kTimeout);
  EXPECT_TRUE(finished.ok()) << finished;
  runtime.Stop();
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutKeys, HostileInputTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Curve" : "Open";
                         });

}  // namespace
}  // namespace petrel

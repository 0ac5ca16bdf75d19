// CURVE security against the real daemons (docs/security.md). Every node
// has a keypair; the authorized-keys file lists the scheduler's, the
// server's and the worker's keys, each with its one role.
//
// - With keys, a TCP relay between the worker and the server sees none of
//   the pushed values' bytes (a known pattern); without keys, the same run
//   shows the pattern: the check can see plaintext.
// - A stranger (a key not listed) and a plaintext peer cannot complete the
//   handshake with the scheduler or the server: their refusals are counted
//   in petrel_van_handshakes_refused_total, nothing of theirs reaches the
//   decoder (petrel_van_messages_rejected_total stays 0), and a worker
//   daemon with a stranger's key never joins.
// - A worker's key cannot join as a server.
// - petrelctl with an admin key gets the scheduler's status; with a
//   worker's key, or without keys, it gets no answer (the refusal is
//   counted) and exits 1 saying so within its --timeout_s.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "security/curve_keys.h"
#include "tests/harness/cluster_keys.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/tcp_proxy.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(30);
// 16 bytes; as floats, 4 normal numbers (no NaN), so they survive a sum.
constexpr char kPattern[] = "PETREL-PLAINTEXT";
constexpr char kRefused[] = "petrel_van_handshakes_refused_total";
constexpr char kRejected[] = "petrel_van_messages_rejected_total";

// The keys of the tests' clusters: one per role, and a stranger's.
std::vector<std::pair<std::string, std::string>> KeyRoles() {
  return {{"scheduler", "scheduler"},
          {"server", "server"},
          {"worker", "worker"},
          {"admin", "admin"},
          {"stranger", ""}};
}

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

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

NodeSettings InProcessWorker(int scheduler_port, const CurveOptions& curve) {
  NodeSettings s;
  s.postoffice.role = pb::ROLE_WORKER;
  s.postoffice.scheduler_host = "127.0.0.1";
  s.postoffice.scheduler_port = scheduler_port;
  s.postoffice.advertise_host = "127.0.0.1";
  s.postoffice.join_timeout = kTimeout;
  s.van.bind_host = "127.0.0.1";
  s.van.curve = curve;
  return s;
}

double Metric(int metrics_port, const char* name, const std::string& label,
              const std::string& value) {
  absl::StatusOr<std::string> text = HttpGet(metrics_port, "/metrics");
  if (!text.ok()) return -1;
  std::map<std::string, double> by = SumMetric(*text, name, label);
  double total = 0;
  for (const auto& [v, n] : by) {
    if (value.empty() || v == value) total += n;
  }
  return total;
}

// A DEALER that connects to 127.0.0.1:`port` (as a CURVE client with
// `keys` and `server_key` unless `keys` is null) and queues a message.
void* Intruder(void* context, int port, const CurveKeyPair* keys,
               const std::string& server_key) {
  void* s = zmq_socket(context, ZMQ_DEALER);
  const int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
  if (keys != nullptr) {
    EXPECT_TRUE(ConfigureCurveClient(s, *keys, server_key).ok());
  }
  zmq_connect(s, absl::StrCat("tcp://127.0.0.1:", port).c_str());
  zmq_send(s, "not a petrel message", 20, ZMQ_DONTWAIT);
  return s;
}

class CurveRelayTest : public ::testing::TestWithParam<bool> {};

TEST_P(CurveRelayTest, ARelaySeesThePushedBytesOnlyWithoutKeys) {
  const bool curve = GetParam();
  ClusterKeys keys(KeyRoles());
  absl::StatusOr<std::unique_ptr<TcpProxy>> relay = TcpProxy::Start();
  ASSERT_TRUE(relay.ok());
  TcpProxy& proxy = **relay;
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30"};
  if (curve) o.scheduler_flags = keys.Flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<std::string> server_flags = {
      absl::StrCat("--advertise_port=", proxy.port())};
  if (curve) server_flags = Concat(server_flags, keys.Flags("server"));
  absl::StatusOr<Subprocess*> server =
      cluster.StartNode("petrel-server", server_flags);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<int> server_port = BoundPort(*server);
  ASSERT_TRUE(server_port.ok()) << server_port.status() << cluster.Output();
  proxy.set_target(*server_port);

  NodeRuntime runtime(
      InProcessWorker(cluster.scheduler_announce().port,
                      curve ? keys.Options("worker") : CurveOptions()));
  KVWorker<float> kv(0, 0, runtime.postoffice());
  ASSERT_TRUE(kv.Start().ok());
  absl::Status joined = runtime.Start();
  ASSERT_TRUE(joined.ok()) << joined << cluster.Output();

  // One key of 1024 patterns, pushed once and pulled back.
  constexpr int kRepeats = 1024;
  const size_t pattern_bytes = sizeof(kPattern) - 1;
  SArray<float> vals(kRepeats * pattern_bytes / sizeof(float));
  for (int i = 0; i < kRepeats; ++i) {
    std::memcpy(reinterpret_cast<char*>(vals.data()) + i * pattern_bytes,
                kPattern, pattern_bytes);
  }
  SArray<Key> one_key(1);
  one_key[0] = 42;
  proxy.Watch(kPattern);
  const int64_t bytes_before = proxy.bytes();
  ASSERT_TRUE(kv.Wait(kv.Push(one_key, vals), kTimeout).ok());
  SArray<float> pulled;
  ASSERT_TRUE(kv.Wait(kv.Pull(one_key, &pulled), kTimeout).ok());
  ASSERT_EQ(pulled.size(), vals.size());
  EXPECT_EQ(std::memcmp(pulled.data(), vals.data(), vals.size() * 4), 0);

  EXPECT_GT(proxy.bytes() - bytes_before,
            static_cast<int64_t>(kRepeats * pattern_bytes))
      << "the push did not go through the relay";
  if (curve) {
    EXPECT_EQ(proxy.pattern_hits(), 0) << "plaintext on the wire";
  } else {
    EXPECT_GE(proxy.pattern_hits(), kRepeats)
        << "the relay cannot see plaintext, so the check proves nothing";
  }
  EXPECT_TRUE(runtime.postoffice()->Finish(kTimeout).ok());
  runtime.Stop();
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutKeys, CurveRelayTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Curve" : "Open";
                         });

TEST(CurveTest, StrangersAndPlaintextPeersAreRefusedAtTheHandshake) {
  ClusterKeys keys(KeyRoles());
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30", "--metrics_port=0"};
  o.scheduler_flags = keys.Flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server =
      cluster.StartNode("petrel-server", keys.Flags("server"));
  ASSERT_TRUE(server.ok());
  NodeRuntime runtime(InProcessWorker(cluster.scheduler_announce().port,
                                      keys.Options("worker")));
  KVWorker<float> kv(0, 0, runtime.postoffice());
  ASSERT_TRUE(kv.Start().ok());
  ASSERT_TRUE(runtime.Start().ok()) << cluster.Output();
  absl::StatusOr<Announce> server_ready = cluster.WaitReady(*server);
  ASSERT_TRUE(server_ready.ok()) << cluster.Output();

  // A worker daemon with a key that is not listed never gets an answer.
  absl::StatusOr<Subprocess*> stranger = cluster.StartNode(
      "petrel-worker",
      Concat(keys.Flags("stranger"), {"--join_timeout_s=2", "--job=check"}));
  ASSERT_TRUE(stranger.ok());
  absl::StatusOr<int> code = (*stranger)->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 1) << (*stranger)->Output();
  EXPECT_TRUE(absl::StrContains((*stranger)->Output(), "no answer from"))
      << (*stranger)->Output();

  void* context = zmq_ctx_new();
  struct Target {
    const char* name;
    Announce announce;
    std::string key;
  } targets[] = {{"scheduler", cluster.scheduler_announce(),
                  keys.keys("scheduler").public_key},
                 {"server", *server_ready, keys.keys("server").public_key}};
  std::vector<void*> sockets;
  for (const Target& t : targets) {
    sockets.push_back(
        Intruder(context, t.announce.port, &keys.keys("stranger"), t.key));
    sockets.push_back(Intruder(context, t.announce.port, nullptr, ""));
  }
  for (const Target& t : targets) {
    const int port = t.announce.metrics_port;
    EXPECT_TRUE(WaitUntil(
        [&] { return Metric(port, kRefused, "reason", "unknown_key") >= 1; },
        kTimeout, absl::Milliseconds(20)))
        << t.name;
    EXPECT_TRUE(WaitUntil(
        [&] {
          return Metric(port, kRefused, "reason", "handshake_failed") >= 1;
        },
        kTimeout, absl::Milliseconds(20)))
        << t.name;
    // Had any of it reached the decoder, it would have been rejected.
    EXPECT_EQ(Metric(port, kRejected, "reason", ""), 0)
        << t.name << "\n"
        << HttpGet(port, "/metrics").value_or("") << cluster.Output();
  }
  for (void* s : sockets) zmq_close(s);
  zmq_ctx_term(context);

  // The members' job is unharmed.
  SArray<Key> k(1);
  k[0] = 7;
  SArray<float> v(1);
  v[0] = 3;
  ASSERT_TRUE(kv.Wait(kv.Push(k, v), kTimeout).ok());
  EXPECT_TRUE(runtime.postoffice()->Finish(kTimeout).ok());
  runtime.Stop();
}

TEST(CurveTest, AWorkerKeyCannotJoinAsAServer) {
  ClusterKeys keys(KeyRoles());
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30"};
  o.scheduler_flags = keys.Flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> impostor =
      cluster.StartNode("petrel-server", keys.Flags("worker"));
  ASSERT_TRUE(impostor.ok());
  absl::StatusOr<int> code = (*impostor)->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 1) << (*impostor)->Output();
  EXPECT_TRUE(absl::StrContains((*impostor)->Output(),
                                "may join as worker, not as server"))
      << (*impostor)->Output();
}

struct Ran {
  int code = -1;
  std::string out;
};

// Runs petrelctl with `args` to its end (it has its own --timeout_s).
Ran Petrelctl(const std::vector<std::string>& args) {
  absl::StatusOr<std::unique_ptr<Subprocess>> p =
      StartProgram(Concat({std::string(PETREL_BIN_DIR) + "/petrelctl"}, args));
  Ran r;
  if (!p.ok()) return r;
  absl::StatusOr<int> code = (*p)->Wait(kTimeout);
  r.code = code.ok() ? *code : -1;
  r.out = (*p)->Output();
  return r;
}

TEST(CurveTest, PetrelctlNeedsAnAdminKey) {
  ClusterKeys keys(KeyRoles());
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30", "--metrics_port=0"};
  o.scheduler_flags = keys.Flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  const Announce scheduler = cluster.scheduler_announce();
  // Refused requests wait out a short timeout; the admin's has room.
  const std::vector<std::string> status = {
      absl::StrCat("--scheduler=127.0.0.1:", scheduler.port),
      "--bind=127.0.0.1", "--timeout_s=3", "status"};

  Ran admin = Petrelctl(
      Concat(keys.Flags("admin"), Concat(status, {"--timeout_s=20"})));
  EXPECT_EQ(admin.code, 0) << admin.out << cluster.Output();
  EXPECT_TRUE(absl::StrContains(admin.out, "job forming")) << admin.out;

  // A key the file lists, but not as admin: the handshake succeeds, the
  // scheduler refuses the request and does not answer.
  Ran worker = Petrelctl(Concat(keys.Flags("worker"), status));
  EXPECT_EQ(worker.code, 1) << worker.out;
  EXPECT_TRUE(absl::StrContains(worker.out, "no answer from the scheduler"))
      << worker.out;
  EXPECT_TRUE(absl::StrContains(worker.out, "role admin")) << worker.out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Metric(scheduler.metrics_port,
                      "petrel_scheduler_admin_requests_total", "result",
                      "refused") >= 1;
      },
      kTimeout, absl::Milliseconds(20)))
      << HttpGet(scheduler.metrics_port, "/metrics").value_or("");
  EXPECT_TRUE(absl::StrContains(cluster.Output(), "not admin"))
      << cluster.Output();

  // Without keys, petrelctl cannot even complete the handshake.
  Ran open = Petrelctl(status);
  EXPECT_EQ(open.code, 1) << open.out;
  EXPECT_TRUE(absl::StrContains(open.out, "no answer from the scheduler"))
      << open.out;
}

TEST(CurveTest, DaemonsRefuseASecretKeyFileOthersCanRead) {
  ClusterKeys keys(KeyRoles());
  ASSERT_EQ(chmod(keys.SecretFile("server").c_str(), 0644), 0);
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      StartProgram(Concat({std::string(PETREL_BIN_DIR) + "/petrel-server",
                           "--scheduler=127.0.0.1:1"},
                          keys.Flags("server")));
  ASSERT_TRUE(server.ok());
  absl::StatusOr<int> code = (*server)->Wait(kTimeout);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 2);
  EXPECT_TRUE(absl::StrContains((*server)->Output(), keys.SecretFile("server")))
      << (*server)->Output();
}

}  // namespace
}  // namespace petrel

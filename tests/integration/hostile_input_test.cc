// Hostile input against the real daemons of a running job. The job has one
// server and two workers: petrel-worker --job=check and this test process
// (an in-process worker node running the same check job).
//
// DaemonsSurviveAndCountMalformedMessages: while this process waits for the
// cluster to form, strangers send it REJECTs and other join replies; then
// the cluster forms, petrel-worker pushes and waits at the workers' barrier
// for this process, which first attacks the scheduler, the server and
// petrel-worker: a raw ZeroMQ DEALER sends malformed messages (random bytes,
// truncated headers, huge declared sizes, too many frames, a wrong version,
// frame and KV counts that disagree, spoofed senders, forged control
// messages, unknown apps, wrong recipients), a plain TCP client sends bytes
// that are not ZMTP, this process (a member) sends the server control
// messages only the scheduler may send, strangers send 1.5 GiB multipart
// messages and a member's connection more than its budget. Afterwards the
// job completes with exact sums, each daemon's /metrics counts the rejects
// and cut connections, the daemons' resident memory stayed bounded, and
// every process exits 0. It runs twice: with the cluster open, and with
// CURVE keys (docs/security.md). With CURVE the raw-ZeroMQ attacker holds an
// authorized worker key (an insider: a stranger would not get past the
// handshake), so the same messages reach the decoder; what differs:
// - strangers (a key that is not listed) are refused at the handshake,
//   counted in petrel_van_handshakes_refused_total{reason="unknown_key"},
//   and their 1.5 GiB never leaves them; the insider's 1.5 GiB (an
//   authorized key, but not a member) is cut at the non-member budget;
// - forged control from this member to the server is dropped because its
//   connection does not hold the scheduler's key
//   (control_not_from_scheduler_key) before the sender check is reached.
//
// JoinsUnderAConnectionFloodAndAWrongToken: with an auth token, 1,100 idle
// TCP connections to the scheduler's port and a join with a wrong token
// (which must not make the scheduler connect back) do not delay the joins.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "security/curve_keys.h"
#include "tests/harness/cluster_keys.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/hostile_peer.h"
#include "van/frame_split.h"
#include "van/wire_codec.h"
#include "worker/train/check_job.h"

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
  // Split messages (van/frame_split.h) whose parts do not match their
  // layout: a short part, and more parts than any message may have.
  std::string split = Header(odd);
  split[6] = static_cast<char>(kSplitFlag);
  auto layout = [](uint64_t part, uint64_t size) {
    std::string l(16, '\0');
    std::memcpy(l.data(), &part, 8);
    std::memcpy(l.data() + 8, &size, 8);
    return l;
  };
  out.push_back({split, layout(8, 24), Zeros(8), Zeros(4), Zeros(8)});
  Frames parts = {split, layout(8, 8 * (kMaxSplitParts + 1))};
  for (int i = 0; i <= kMaxSplitParts; ++i) parts.push_back(Zeros(8));
  out.push_back(parts);
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
  pb::Meta barrier;  // spoofed scheduler releasing a barrier
  barrier.set_sender(kSchedulerId);
  barrier.set_recipient(target_id);
  barrier.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
  barrier.mutable_control()->set_barrier_group(kWorkerGroup);
  barrier.mutable_control()->set_barrier_epoch(1000);
  out.push_back({Header(barrier)});
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

NodeSettings InProcessWorker(int scheduler_port,
                             const CurveOptions& curve = CurveOptions()) {
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
  std::string key;  // the node's public key (used with CURVE)
};

// How a raw DEALER connects: plaintext (curve null), or as a CURVE client
// holding `curve` of the node whose public key is the target's.
struct Attacker {
  std::string routing_id;
  const CurveKeyPair* curve = nullptr;
  std::string label;  // for the log line
};

// Join replies from strangers to a node that waits for the cluster: none
// names the node's own transport identity, which only the scheduler knows.
std::vector<Frames> ForgedJoinReplies() {
  std::vector<Frames> out;
  for (pb::Command cmd :
       {pb::COMMAND_REJECT, pb::COMMAND_TERMINATE, pb::COMMAND_ADD_NODE}) {
    pb::Meta m;
    m.set_sender(kSchedulerId);
    m.set_recipient(-1);
    m.mutable_control()->set_cmd(cmd);
    m.mutable_control()->set_reason("a stranger says no");
    m.mutable_control()->set_failed(true);
    out.push_back({Header(m)});
    m.mutable_control()->add_nodes()->set_transport_id("p0123456789abcdef");
    out.push_back({Header(m)});
  }
  return out;
}

double MetricOf(int metrics_port, const std::string& name,
                const std::string& reason) {
  absl::StatusOr<std::string> text = HttpGet(metrics_port, "/metrics");
  if (!text.ok()) return -1;
  return SumMetric(*text, name, "reason")[reason];
}

constexpr char kCut[] = "petrel_van_connections_cut_total";
constexpr char kRefused[] = "petrel_van_handshakes_refused_total";

// Sends a multipart message of `frames` x `frame_bytes` (after `hello`
// frames, if any) from `attacker`'s DEALER to the daemon of `t` and waits
// until the daemon's counter `metric`{reason=`reason`} grew: it cut the
// connection (kCut), or refused it at the handshake (kRefused). Returns by
// how much the daemon's peak resident memory grew.
int64_t OversizedMessage(const Target& t, pid_t pid, const Attacker& attacker,
                         const std::vector<Frames>& before, int frames,
                         size_t frame_bytes, const std::string& metric,
                         const std::string& reason) {
  const int64_t rss = ResidentBytes(pid).value_or(0);
  const int64_t peak_before = std::max(rss, PeakResidentBytes(pid).value_or(0));
  const double cuts = MetricOf(t.announce.metrics_port, metric, reason);
  {
    RawDealer dealer(t.announce.port, attacker.routing_id, attacker.curve,
                     t.key);
    for (const Frames& f : before) EXPECT_TRUE(dealer.Send(f).ok());
    EXPECT_TRUE(
        dealer.SendLarge(Header(Request(9, t.id, 0)), frames, frame_bytes)
            .ok());
    EXPECT_TRUE(WaitUntil(
        [&] {
          return MetricOf(t.announce.metrics_port, metric, reason) > cuts;
        },
        kTimeout, absl::Milliseconds(20)))
        << t.name << " did not count " << metric << " (" << reason << ")";
  }
  const int64_t peak = PeakResidentBytes(pid).value_or(0);
  std::printf(
      "%s: %d x %zu MiB from %s: %s (%s); VmRSS before %lld MiB, "
      "VmHWM before %lld MiB, after %lld MiB\n",
      t.name.c_str(), frames, frame_bytes >> 20, attacker.label.c_str(),
      metric == kCut ? "cut" : "refused", reason.c_str(),
      static_cast<long long>(rss >> 20),
      static_cast<long long>(peak_before >> 20),
      static_cast<long long>(peak >> 20));
  return peak - peak_before;
}

// The parameter: false runs the cluster open, true with CURVE keys.
class HostileInputTest : public ::testing::TestWithParam<bool> {};

TEST_P(HostileInputTest, DaemonsSurviveAndCountMalformedMessages) {
  const bool curve = GetParam();
  // "insider" holds an authorized worker key but joins nothing; "stranger"
  // holds a key that is not listed.
  ClusterKeys keys({{"scheduler", "scheduler"},
                    {"server", "server"},
                    {"worker", "worker"},
                    {"worker2", "worker"},
                    {"insider", "worker"},
                    {"stranger", ""}});
  auto key_flags = [&](const std::string& name) {
    return curve ? keys.Flags(name) : std::vector<std::string>();
  };
  auto with_keys = [&](std::vector<std::string> flags,
                       const std::string& name) {
    std::vector<std::string> k = key_flags(name);
    flags.insert(flags.end(), k.begin(), k.end());
    return flags;
  };
  const CurveKeyPair* insider = curve ? &keys.keys("insider") : nullptr;
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 1;
  o.num_workers = 2;
  o.flags = {"--metrics_port=0", "--join_timeout_s=60"};
  o.scheduler_flags = key_flags("scheduler");
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();

  // This process joins first; while it waits for the others, strangers
  // (with CURVE: the insider) answer its join. None of that may stop it.
  NodeRuntime runtime(
      InProcessWorker(cluster.scheduler_announce().port,
                      curve ? keys.Options("worker2") : CurveOptions()));
  KVWorker<float> kv(0, 0, runtime.postoffice());
  ASSERT_TRUE(kv.Start().ok());
  absl::Status joined;
  std::thread joiner([&] { joined = runtime.Start(); });
  ASSERT_TRUE(WaitUntil([&] { return runtime.postoffice()->van()->port() > 0; },
                        kTimeout));
  const std::vector<Frames> replies = ForgedJoinReplies();
  SendWithDealer(runtime.postoffice()->van()->port(), replies, insider,
                 keys.keys("worker2").public_key);
  auto refused = [&] {
    double n = 0;
    for (const char* reason :
         {"unauthenticated", "control_not_from_scheduler_key"}) {
      n +=
          runtime.metrics()->Value(kRejected, {{"reason", reason}}).value_or(0);
    }
    return n;
  };
  EXPECT_TRUE(WaitUntil([&] { return refused() >= replies.size(); }, kTimeout))
      << refused();
  if (curve) {
    // A stranger's forged replies do not get past the handshake.
    auto unknown = [&] {
      return runtime.metrics()
          ->Value(kRefused, {{"reason", "unknown_key"}})
          .value_or(0);
    };
    RawDealer stranger(runtime.postoffice()->van()->port(), "",
                       &keys.keys("stranger"), keys.keys("worker2").public_key);
    for (const Frames& f : replies) EXPECT_TRUE(stranger.Send(f).ok());
    EXPECT_TRUE(WaitUntil([&] { return unknown() >= 1; }, kTimeout));
  }

  // The server holds a member's connection to 64 MiB in flight. The
  // worker's check waits for the test's worker at a barrier while the
  // attacks below run (seconds alone; a minute and more on a loaded VM
  // with CURVE), so its timeout is generous.
  absl::StatusOr<Subprocess*> server = cluster.StartNode(
      "petrel-server", with_keys({"--member_bytes=67108864"}, "server"));
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker", with_keys({"--job=check", "--timeout_s=300"}, "worker"));
  ASSERT_TRUE(server.ok() && worker.ok());
  joiner.join();
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
  for (const Target& t : targets) {
    std::vector<Frames> bad = MalformedMessages(t.id);
    std::vector<Frames> lies = LyingMessages(t.id);
    bad.insert(bad.end(), lies.begin(), lies.end());
    SendRawTcp(t.announce.port, garbage);
    SendRawTcp(t.announce.port, "GET / HTTP/1.0\r\n\r\n");
    SendWithDealer(t.announce.port, bad, insider, t.key);
    sent.push_back(bad.size());
  }

  // A member (this process) sends the server what only the scheduler may.
  const int server_id = server_ready->id;
  for (pb::Command cmd :
       {pb::COMMAND_TERMINATE, pb::COMMAND_BARRIER, pb::COMMAND_NODE_DEAD}) {
    Message forged;
    forged.meta.set_recipient(server_id);
    forged.meta.set_request(false);
    pb::Control* c = forged.meta.mutable_control();
    c->set_cmd(cmd);
    c->set_failed(true);
    c->set_barrier_group(kWorkerGroup);
    c->set_barrier_epoch(1000);
    c->add_nodes()->set_id(worker_ready->id);
    EXPECT_TRUE(runtime.postoffice()->Send(std::move(forged)).ok());
  }

  // 1.5 GiB in one multipart message to the scheduler and the server. Open:
  // from strangers, cut at the non-member budget (16 MiB by default). With
  // CURVE: a stranger is refused at the handshake (nothing of it is
  // received; unknown_key for a key that is not listed, handshake_failed for
  // a plaintext peer), and the insider, past the handshake but not a member,
  // is cut at the non-member budget.
  constexpr int64_t kBound = int64_t{256} << 20;
  std::vector<std::pair<Attacker, std::string>> big_senders;
  if (curve) {
    big_senders.push_back(
        {{"", &keys.keys("stranger"), "a stranger's key"}, "unknown_key"});
    big_senders.push_back(
        {{"", nullptr, "a plaintext stranger"}, "handshake_failed"});
  }
  big_senders.push_back({{"", insider, curve ? "the insider" : "a stranger"},
                         "non_member_bytes"});
  for (int i : {0, 1}) {
    const pid_t pid = i == 0 ? cluster.scheduler()->pid() : (*server)->pid();
    for (const auto& [attacker, reason] : big_senders) {
      const char* metric =
          absl::StrContains(reason, "non_member") ? kCut : kRefused;
      // Refused at the handshake, none of the message is received.
      const int64_t bound = metric == kCut ? kBound : int64_t{16} << 20;
      EXPECT_LT(OversizedMessage(targets[i], pid, attacker, {}, 6,
                                 size_t{256} << 20, metric, reason),
                bound)
          << targets[i].name << " " << attacker.label;
    }
  }
  // 256 MiB on a connection bearing this member's identity (with CURVE, from
  // the insider's key: membership is the identity's): cut at the server's
  // member budget (64 MiB here; a smaller message can arrive whole between
  // two of the guard's checks, see security/connection_guard.h).
  Buffer hello = HelloFrame();
  EXPECT_LT(
      OversizedMessage(
          targets[1], (*server)->pid(),
          {absl::StrCat(runtime.postoffice()->van()->transport_id(), "#77"),
           insider, "a member's identity"},
          {{std::string(hello.data(), hello.size())}}, 4, size_t{64} << 20,
          kCut, "member_bytes"),
      kBound);

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
        AwaitRejects(targets[i].announce.metrics_port, sent[i]);
    double total = 0;
    std::string summary;
    for (const auto& [reason, n] : rejects) {
      total += n;
      absl::StrAppend(&summary, " ", reason, "=", n);
    }
    std::printf(
        "%s: sent %zu bad messages; rejected:%s; handshakes refused: "
        "unknown_key=%.0f handshake_failed=%.0f\n",
        targets[i].name.c_str(), sent[i], summary.c_str(),
        MetricOf(targets[i].announce.metrics_port, kRefused, "unknown_key"),
        MetricOf(targets[i].announce.metrics_port, kRefused,
                 "handshake_failed"));
    EXPECT_GE(total, sent[i]) << targets[i].name;
    for (const char* reason :
         {"invalid_argument", "resource_exhausted", "permission_denied"}) {
      EXPECT_GT(rejects[reason], 0) << targets[i].name << " " << reason;
    }
  }
  // With CURVE the forged control is dropped for the key it came with.
  EXPECT_GE(AwaitRejects(targets[1].announce.metrics_port,
                         0)[curve ? "control_not_from_scheduler_key"
                                  : "control_not_from_scheduler"],
            3);

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

TEST(HostileInputFloodTest, JoinsUnderAConnectionFloodAndAWrongToken) {
  constexpr char kToken[] = "s3cret";
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 1;
  o.num_workers = 2;
  o.flags = {"--metrics_port=0", "--join_timeout_s=60",
             absl::StrCat("--auth_token=", kToken)};
  DaemonCluster cluster(o);
  // The scheduler inherits a soft limit of 1024 descriptors, as from a
  // login shell; it raises its own to the hard limit.
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = std::min<rlim_t>(1024, saved.rlim_max);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  absl::Status started = cluster.StartScheduler();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(started.ok()) << cluster.Output();
  const int port = cluster.scheduler_announce().port;
  const int metrics_port = cluster.scheduler_announce().metrics_port;

  constexpr int kFlood = 1100;
  absl::StatusOr<std::vector<int>> flood = OpenIdleConnections(port, kFlood);
  ASSERT_TRUE(flood.ok()) << flood.status();

  // A join with a wrong token, advertising a port this test watches: the
  // scheduler must neither answer nor connect there.
  ConnectionCounter observer;
  const std::string stranger = "pdeadbeefdeadbeef";
  pb::Meta join;
  join.set_sender(kEmptyNodeId);
  join.set_recipient(kSchedulerId);
  join.set_request(true);
  join.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  join.mutable_control()->set_auth_token("guess");
  pb::Node* node = join.mutable_control()->add_nodes();
  node->set_role(pb::ROLE_WORKER);
  node->set_host("127.0.0.1");
  node->set_port(observer.port());
  node->set_requested_rank(-1);
  node->set_transport_id(stranger);
  RawDealer intruder(port, stranger);
  ASSERT_TRUE(intruder.Send({Header(join)}).ok());
  EXPECT_TRUE(WaitUntil(
      [&] { return MetricOf(metrics_port, kRejected, "unauthenticated") >= 1; },
      kTimeout, absl::Milliseconds(50)));

  absl::StatusOr<Subprocess*> server = cluster.StartNode("petrel-server");
  absl::StatusOr<Subprocess*> worker =
      cluster.StartNode("petrel-worker", {"--job=check", "--timeout_s=60"});
  ASSERT_TRUE(server.ok() && worker.ok());
  ASSERT_TRUE(cluster.scheduler()->WaitForLine("server from", kTimeout).ok())
      << cluster.Output();
  ASSERT_TRUE(cluster.scheduler()->WaitForLine("worker from", kTimeout).ok())
      << cluster.Output();

  // The last node's join, timed, while the flood's connections are open.
  NodeSettings settings = InProcessWorker(port);
  settings.postoffice.auth_token = kToken;
  NodeRuntime runtime(settings);
  KVWorker<float> kv(0, 0, runtime.postoffice());
  ASSERT_TRUE(kv.Start().ok());
  const absl::Time start = absl::Now();
  absl::Status joined = runtime.Start();
  const absl::Duration join_time = absl::Now() - start;
  ASSERT_TRUE(joined.ok()) << joined << cluster.Output();
  std::printf("join with %d idle connections open: %s\n", kFlood,
              absl::FormatDuration(join_time).c_str());
  // The goal is a second or two; the bound is wide for a loaded machine.
  EXPECT_LT(join_time, absl::Seconds(5));

  CheckJobOptions check;
  check.timeout = kTimeout;
  absl::StatusOr<std::string> line =
      RunCheckJob(runtime.postoffice(), &kv, check);
  ASSERT_TRUE(line.ok()) << line.status() << cluster.Output();
  EXPECT_TRUE(absl::StrContains(*line, "ok=true"));
  EXPECT_TRUE((*worker)->WaitForLine("ok=true", kTimeout).ok())
      << cluster.Output();

  // By now a connection back would long have been made.
  EXPECT_EQ(observer.Accepted(), 0);
  // Those over the cap (256) are cut as the scheduler accepts them (others
  // wait in the kernel's backlog, or end at the handshake timeout).
  double cut = 0;
  EXPECT_TRUE(WaitUntil(
      [&] {
        cut = MetricOf(metrics_port, kCut, "non_member_connections");
        return cut >= 1;
      },
      kTimeout, absl::Milliseconds(50)));
  absl::StatusOr<std::string> text = HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(text.ok());
  EXPECT_LE(SumMetric(*text, "petrel_van_non_member_connections", "")[""], 256);
  std::printf("scheduler cut %.0f idle connections\n", cut);

  CloseAll(&*flood);
  absl::Status finished = runtime.postoffice()->Finish(kTimeout);
  EXPECT_TRUE(finished.ok()) << finished;
  runtime.Stop();
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
}

}  // namespace
}  // namespace petrel

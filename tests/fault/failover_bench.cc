// failover_bench: how long after a server's kill -9 its key ranges are
// served again (docs/failures.md, "Replicated servers"). Each round starts
// the real daemons on 127.0.0.1 (petrel-scheduler --replicas=R and S
// petrel-servers) and an in-process worker that pushes, one request at a
// time, to keys all owned by one server; after a warm-up it kills that
// server (SIGKILL) and sends the next push at once: the time from the kill
// to that push's answer (served by the replica that took over) is the
// recovery time. Each round then pulls the keys and checks that every
// acknowledged push is there exactly once. Prints one line per round and
// the median and maximum.
//
//   failover_bench [kills=20] [servers=3] [replicas=2]
//
// Run by tools/fault/failover-bench.sh. Exits 1 when a sum is wrong or a
// round fails.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(20);
constexpr int kKeys = 64;
constexpr int kWarmup = 200;

absl::StatusOr<double> Round(int round, int servers, int replicas) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = servers;
  o.num_workers = 1;
  o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200"};
  o.scheduler_flags = {absl::StrCat("--replicas=", replicas),
                       "--heartbeat_timeout_s=60"};
  DaemonCluster cluster(o);
  if (absl::Status s = cluster.StartScheduler(); !s.ok()) return s;
  std::vector<Subprocess*> procs;
  for (int i = 0; i < servers; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    if (!s.ok()) return s.status();
    procs.push_back(*s);
  }
  NodeSettings settings;
  settings.postoffice.role = pb::ROLE_WORKER;
  settings.postoffice.scheduler_host = "127.0.0.1";
  settings.postoffice.scheduler_port = cluster.scheduler_announce().port;
  settings.postoffice.advertise_host = "127.0.0.1";
  settings.postoffice.num_servers = servers;
  settings.postoffice.heartbeat_interval = absl::Milliseconds(200);
  settings.postoffice.join_timeout = kTimeout;
  settings.van.bind_host = "127.0.0.1";
  NodeRuntime runtime(settings);
  Postoffice* po = runtime.postoffice();
  KVWorker<float> kv(0, 0, po);
  if (absl::Status s = kv.Start(); !s.ok()) return s;
  if (absl::Status s = runtime.Start(); !s.ok()) return s;
  std::vector<int> rank_of_id(servers);
  Subprocess* victim = nullptr;
  const int victim_rank = round % servers;
  for (Subprocess* p : procs) {
    absl::StatusOr<Announce> a = cluster.WaitReady(p);
    if (!a.ok()) return a.status();
    if (a->rank == victim_rank) victim = p;
  }
  if (victim == nullptr) return absl::InternalError("no server of that rank");
  // Keys owned by the victim.
  const KeyRangeMap ranges = po->key_ranges();
  SArray<Key> keys(kKeys);
  for (Key k = 0, n = 0; n < kKeys; ++k) {
    if (ranges.OwnerOf(k) == victim_rank) keys[n++] = k;
  }
  SArray<float> ones(kKeys);
  for (int i = 0; i < kKeys; ++i) ones[i] = 1;
  int acked = 0;
  for (int i = 0; i < kWarmup; ++i) {
    if (absl::Status s = kv.Wait(kv.Push(keys, ones), kTimeout); !s.ok()) {
      return s;
    }
    ++acked;
  }
  const absl::Time killed = absl::Now();
  victim->Signal(SIGKILL);
  absl::Status s = kv.Wait(kv.Push(keys, ones), kTimeout);
  const absl::Duration took = absl::Now() - killed;
  if (!s.ok()) return s;
  ++acked;
  for (int i = 0; i < 50; ++i) {  // served by the successor from now on
    if (absl::Status p = kv.Wait(kv.Push(keys, ones), kTimeout); !p.ok()) {
      return p;
    }
    ++acked;
  }
  SArray<float> got;
  if (absl::Status p = kv.Wait(kv.Pull(keys, &got), kTimeout); !p.ok()) {
    return p;
  }
  for (int i = 0; i < kKeys; ++i) {
    if (got.size() != static_cast<size_t>(kKeys) ||
        got[i] != static_cast<float>(acked)) {
      return absl::DataLossError(absl::StrCat(
          "key ", keys[i], ": expected ", acked, " got ",
          got.size() == static_cast<size_t>(kKeys) ? got[i] : -1.0f));
    }
  }
  po->Finish(kTimeout).IgnoreError();
  runtime.Stop();
  return absl::ToDoubleMilliseconds(took);
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  const int kills = argc > 1 ? std::atoi(argv[1]) : 20;
  const int servers = argc > 2 ? std::atoi(argv[2]) : 3;
  const int replicas = argc > 3 ? std::atoi(argv[3]) : 2;
  std::vector<double> ms;
  for (int r = 0; r < kills; ++r) {
    absl::StatusOr<double> t = petrel::Round(r, servers, replicas);
    if (!t.ok()) {
      std::fprintf(stderr, "round %d: %s\n", r, t.status().ToString().c_str());
      return 1;
    }
    std::printf(
        "round %d: server rank %d killed, its keys served again after "
        "%.0f ms; sums exact\n",
        r, r % servers, *t);
    std::fflush(stdout);
    ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("failover: %d kills, p50 %.0f ms, max %.0f ms\n", kills,
              ms[ms.size() / 2], ms.back());
  return 0;
}

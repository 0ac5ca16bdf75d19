// PS-Lite's DMLC_* environment variables, each one for each role, with the
// real daemons on loopback addresses: the scheduler listens on
// DMLC_PS_ROOT_PORT at DMLC_PS_ROOT_URI, nodes bind DMLC_PORT and advertise
// DMLC_NODE_HOST or DMLC_INTERFACE's address, DMLC_NUM_SERVER/WORKER size
// the job, and DMLC_ROLE makes one program (petrel-worker) any role.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

constexpr absl::Duration kTimeout = absl::Seconds(60);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

// A port that was free on `host` a moment ago (bound to port 0, closed).
int FreePort(const char* host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, host, &addr.sin_addr);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// The job's DMLC_* variables for `role`: the scheduler at 127.0.0.3:port.
Env JobEnv(const char* role, int port, Env extra = {}) {
  Env env = {{"DMLC_ROLE", role},
             {"DMLC_PS_ROOT_URI", "127.0.0.3"},
             {"DMLC_PS_ROOT_PORT", absl::StrCat(port)},
             {"DMLC_NUM_SERVER", "2"},
             {"DMLC_NUM_WORKER", "2"}};
  for (auto& e : extra) env.push_back(std::move(e));
  return env;
}

struct Proc {
  std::string name;
  std::unique_ptr<Subprocess> proc;
};

// Starts each process; then waits for all to exit. Returns the output of
// them all; `codes` gets their exit codes (-1 when one did not exit).
class Job {
 public:
  void Start(const std::string& name, std::vector<std::string> argv, Env env) {
    absl::StatusOr<std::unique_ptr<Subprocess>> p =
        StartProgram(std::move(argv), std::move(env));
    ASSERT_TRUE(p.ok()) << p.status();
    procs_.push_back({name, *std::move(p)});
  }
  Subprocess* get(size_t i) { return procs_[i].proc.get(); }
  std::vector<int> WaitAll() {
    std::vector<int> codes;
    const absl::Time deadline = absl::Now() + kTimeout;
    for (Proc& p : procs_) {
      absl::StatusOr<int> c =
          p.proc->Wait(std::max(absl::ZeroDuration(), deadline - absl::Now()));
      codes.push_back(c.ok() ? *c : -1);
    }
    return codes;
  }
  std::string Output() const {
    std::string out;
    for (const Proc& p : procs_) {
      absl::StrAppend(&out, "==== ", p.name, "\n", p.proc->Output());
    }
    return out;
  }

 private:
  std::vector<Proc> procs_;
};

// Every DMLC_* variable of the table, each given to the role(s) it
// configures, and nothing else but --bind (so that each process listens on
// its own loopback address).
TEST(DmlcEnvTest, EveryVariableWorksForEveryRole) {
  const int root_port = FreePort("127.0.0.3");
  const int server_port = FreePort("127.0.0.2");
  ASSERT_GT(root_port, 0);
  ASSERT_GT(server_port, 0);
  Job job;
  job.Start("scheduler", {Bin("petrel-scheduler"), "--bind=127.0.0.3"},
            JobEnv("scheduler", root_port));
  job.Start("server0", {Bin("petrel-server"), "--bind=127.0.0.2"},
            JobEnv("server", root_port,
                   {{"DMLC_PORT", absl::StrCat(server_port)},
                    {"DMLC_NODE_HOST", "127.0.0.2"}}));
  job.Start("server1", {Bin("petrel-server"), "--bind=127.0.0.1"},
            JobEnv("server", root_port, {{"DMLC_INTERFACE", "lo"}}));
  job.Start("worker0", {Bin("petrel-worker"), "--bind=127.0.0.4"},
            JobEnv("worker", root_port, {{"DMLC_NODE_HOST", "127.0.0.4"}}));
  job.Start("worker1", {Bin("petrel-worker"), "--bind=127.0.0.1"},
            JobEnv("worker", root_port, {{"DMLC_INTERFACE", "lo"}}));

  // DMLC_PS_ROOT_PORT is the scheduler's port, DMLC_PS_ROOT_URI its host.
  absl::StatusOr<std::string> listen =
      job.get(0)->WaitForLine("PETREL_LISTEN", kTimeout);
  ASSERT_TRUE(listen.ok()) << listen.status() << job.Output();
  EXPECT_TRUE(absl::StrContains(
      *listen, absl::StrCat("host=127.0.0.3 port=", root_port, " ")))
      << *listen;
  // DMLC_PORT and DMLC_NODE_HOST on a server and a worker.
  absl::StatusOr<std::string> ready =
      job.get(1)->WaitForLine("PETREL_READY", kTimeout);
  ASSERT_TRUE(ready.ok()) << ready.status() << job.Output();
  EXPECT_TRUE(absl::StrContains(
      *ready, absl::StrCat("host=127.0.0.2 port=", server_port, " ")))
      << *ready;
  ready = job.get(3)->WaitForLine("PETREL_READY", kTimeout);
  ASSERT_TRUE(ready.ok()) << ready.status() << job.Output();
  EXPECT_TRUE(absl::StrContains(*ready, "host=127.0.0.4 ")) << *ready;
  // DMLC_INTERFACE=lo: the loopback interface's address.
  for (size_t i : {2, 4}) {
    ready = job.get(i)->WaitForLine("PETREL_READY", kTimeout);
    ASSERT_TRUE(ready.ok()) << ready.status() << job.Output();
    EXPECT_TRUE(absl::StrContains(*ready, "host=127.0.0.1 ")) << *ready;
  }
  // DMLC_NUM_SERVER / DMLC_NUM_WORKER: a 2 + 2 job whose sums are exact.
  EXPECT_EQ(job.WaitAll(), std::vector<int>(5, 0)) << job.Output();
  const std::string out = job.Output();
  EXPECT_TRUE(absl::StrContains(out, "cluster formed: 2 servers, 2 workers"))
      << out;
  EXPECT_TRUE(
      absl::StrContains(out, "check rank=0 keys=1000 rounds=10 ok=true"))
      << out;
  EXPECT_TRUE(
      absl::StrContains(out, "check rank=1 keys=1000 rounds=10 ok=true"))
      << out;
}

// The scheduler binds DMLC_PS_ROOT_PORT, but --port wins over it.
TEST(DmlcEnvTest, PortFlagWinsOverRootPortOnTheScheduler) {
  const int root_port = FreePort("127.0.0.1");
  const int flag_port = FreePort("127.0.0.1");
  std::unique_ptr<Subprocess> scheduler =
      *StartProgram({Bin("petrel-scheduler"), "--bind=127.0.0.1",
                     absl::StrCat("--port=", flag_port), "--join_timeout_s=1"},
                    {{"DMLC_ROLE", "scheduler"},
                     {"DMLC_PS_ROOT_PORT", absl::StrCat(root_port)}});
  absl::StatusOr<std::string> listen =
      scheduler->WaitForLine("PETREL_LISTEN", kTimeout);
  ASSERT_TRUE(listen.ok()) << listen.status() << scheduler->Output();
  EXPECT_TRUE(absl::StrContains(*listen, absl::StrCat("port=", flag_port)))
      << *listen;
  EXPECT_EQ(*scheduler->Wait(kTimeout), 1);  // nobody joined
}

// petrel-worker started in every role (the dmlc tracker's way): the
// scheduler and the servers are the built-in ones, in its process.
TEST(DmlcEnvTest, PetrelWorkerRunsInEveryRole) {
  const int root_port = FreePort("127.0.0.3");
  Job job;
  const std::vector<std::string> argv = {Bin("petrel-worker"),
                                         "--bind=127.0.0.3", "--rounds=3"};
  for (const char* role :
       {"scheduler", "server", "server", "worker", "worker"}) {
    job.Start(role, argv,
              JobEnv(role, root_port, {{"DMLC_NODE_HOST", "127.0.0.3"}}));
  }
  EXPECT_EQ(job.WaitAll(), std::vector<int>(5, 0)) << job.Output();
  const std::string out = job.Output();
  EXPECT_TRUE(absl::StrContains(out, "PETREL_LISTEN role=scheduler")) << out;
  EXPECT_TRUE(absl::StrContains(out, "PETREL_READY role=server id=8 rank=0"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "check rank=1 keys=1000 rounds=3 ok=true"))
      << out;
}

// A node given another cluster size than the scheduler's is refused at its
// join, naming both values, and exits 2 (a configuration error).
TEST(DmlcEnvTest, NodeGivenAnotherClusterSizeIsRefusedNamingBothValues) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=20"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server =
      cluster.StartNode("petrel-server", {"--num_servers=2"});
  ASSERT_TRUE(server.ok());
  absl::StatusOr<int> code = (*server)->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 2) << cluster.Output();
  EXPECT_TRUE(absl::StrContains(
      (*server)->Output(),
      "this node has num_servers=2 but the scheduler num_servers=1"))
      << (*server)->Output();
  // The same for the workers' count.
  absl::StatusOr<Subprocess*> worker =
      cluster.StartNode("petrel-worker", {"--num_workers=3"});
  ASSERT_TRUE(worker.ok());
  code = (*worker)->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 2) << cluster.Output();
  EXPECT_TRUE(absl::StrContains(
      (*worker)->Output(),
      "this node has num_workers=3 but the scheduler num_workers=1"))
      << (*worker)->Output();
  EXPECT_TRUE(absl::StrContains(cluster.scheduler()->Output(),
                                "refused server from 127.0.0.1:"))
      << cluster.scheduler()->Output();
}

}  // namespace
}  // namespace petrel

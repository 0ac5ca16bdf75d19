// Start-up of the real daemons on 127.0.0.1: errors that explain
// themselves (a missing server, an unreachable scheduler, a port in use),
// flag handling (bad flags exit 2, --help exits 0) and PS-Lite's DMLC_*
// environment variables.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kExitTimeout = absl::Seconds(60);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

// Runs `argv` to its end; returns the exit code, output in `*output`.
int RunToExit(std::vector<std::string> argv, std::string* output,
              std::vector<std::pair<std::string, std::string>> env = {}) {
  absl::StatusOr<std::unique_ptr<Subprocess>> p =
      StartProgram(std::move(argv), std::move(env));
  if (!p.ok()) {
    *output = std::string(p.status().message());
    return -1;
  }
  absl::StatusOr<int> code = (*p)->Wait(kExitTimeout);
  *output = (*p)->Output();
  return code.ok() ? *code : -1;
}

TEST(StartupTest, SchedulerNamesTheMissingServerAndWhoJoined) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 2;
  o.num_workers = 1;
  o.flags = {"--join_timeout_s=3"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server = cluster.StartNode("petrel-server");
  absl::StatusOr<Subprocess*> worker = cluster.StartNode("petrel-worker");
  ASSERT_TRUE(server.ok() && worker.ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::map<std::string, int>> codes =
      cluster.WaitAll(kExitTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(codes->at("scheduler"), 1);
  std::string out = cluster.scheduler()->Output();
  EXPECT_TRUE(
      absl::StrContains(out, "missing 1 of 2 servers and 0 of 1 workers"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "server from 127.0.0.1:")) << out;
  EXPECT_TRUE(absl::StrContains(out, "worker from 127.0.0.1:")) << out;
  EXPECT_NE(*(*server)->Wait(absl::ZeroDuration()), 0) << (*server)->Output();
  EXPECT_NE(*(*worker)->Wait(absl::ZeroDuration()), 0) << (*worker)->Output();
}

// A server fills its dense tables before it joins; with a large MLP that
// takes seconds. SIGTERM then stops the fill at once, and the server's one
// line names what it was doing and how far it got.
TEST(StartupTest, SigtermWhileFillingADenseTableStopsItNamingTheWork) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_startup_fill_", getpid());
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/mlp.textproto";
  // 1.44e8 weights with Adam: 2.25 million rows, 1.7 GiB.
  std::ofstream(config) << "model { kind: KIND_MLP hidden: [12000, 12000] }\n";
  std::vector<std::string> argv = {
      Bin("petrel-server"), "--config=" + config,      "--num_servers=1",
      "--num_workers=1",    "--scheduler=127.0.0.1:1", "--server_threads=1"};
  for (const std::string& f : LoopbackFlags()) argv.push_back(f);
  absl::StatusOr<std::unique_ptr<Subprocess>> server = StartProgram(argv);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::string> line =
      (*server)->WaitForLine("filling dense table", kExitTimeout);
  ASSERT_TRUE(line.ok()) << line.status() << "\n" << (*server)->Output();
  const absl::Time signalled = absl::Now();
  (*server)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*server)->Wait(kExitTimeout);
  const std::string out = (*server)->Output();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(code.ok()) << out;
  EXPECT_EQ(*code, 1) << out;
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(20)) << out;
  EXPECT_TRUE(absl::StrContains(
      out, "petrel-server: SIGTERM received while filling dense table "))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "% after ")) << out;
  EXPECT_TRUE(absl::StrContains(out, "; stopping")) << out;
  // It never got to the scheduler.
  EXPECT_FALSE(absl::StrContains(out, "PETREL_READY")) << out;
}

// A loopback port bound (not listening) by the test: connecting is refused.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~ClosedPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(StartupTest, WorkerNamesTheUnreachableSchedulerAddress) {
  ClosedPort closed;
  ASSERT_GT(closed.port(), 0);
  const std::string address = absl::StrCat("127.0.0.1:", closed.port());
  std::vector<std::string> argv = {
      Bin("petrel-worker"), "--scheduler=" + address, "--join_timeout_s=2"};
  for (const std::string& f : LoopbackFlags()) argv.push_back(f);
  const absl::Time start = absl::Now();
  std::string out;
  int code = RunToExit(argv, &out);
  EXPECT_EQ(code, 1) << out;
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_TRUE(absl::StrContains(out,
                                "petrel-worker: no answer from the "
                                "scheduler at " +
                                    address + " within 2s"))
      << out;
}

TEST(StartupTest, PortInUseIsOneLineNamingThePort) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  DaemonCluster first(o);
  ASSERT_TRUE(first.StartScheduler().ok()) << first.Output();
  const int port = first.scheduler_announce().port;
  std::vector<std::string> argv = {Bin("petrel-scheduler"),
                                   absl::StrCat("--port=", port)};
  for (const std::string& f : LoopbackFlags()) argv.push_back(f);
  std::string out;
  EXPECT_EQ(RunToExit(argv, &out), 1) << out;
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StrContains(line, "in use")) lines.emplace_back(line);
  }
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_TRUE(absl::StartsWith(lines[0],
                               "petrel-scheduler: port " + absl::StrCat(port)))
      << lines[0];
  EXPECT_TRUE(first.scheduler()->Running());  // the first one is untouched
}

TEST(StartupTest, BadFlagsExitTwoForEveryDaemon) {
  const std::vector<std::vector<std::string>> bad = {
      {"--num_servers=0"},
      {"--num_workers=-3"},
      {"--scheduler=nonsense"},
      {"--port=70000"},
      {"--port=-1"},
      {"--rank=-5"},
      {"--join_timeout_s=0"},
      {"--heartbeat_interval_ms=-1"},
      {"--metrics_port=70000"},
      {"--advertise_port=-2"},
      {"--stop_timeout_s=0"},
      {"--max_frames=0"},
      {"--io_cpu=-2"},
      {"--no_such_flag=1"},
      {"stray_argument"},
      {"--log_dir=/nonexistent/petrel-logs"}};
  for (const char* daemon :
       {"petrel-scheduler", "petrel-server", "petrel-worker"}) {
    for (const std::vector<std::string>& flags : bad) {
      std::vector<std::string> argv = {Bin(daemon), "--scheduler=127.0.0.1:1"};
      argv.insert(argv.end(), flags.begin(), flags.end());
      std::string out;
      EXPECT_EQ(RunToExit(argv, &out), 2) << daemon << " " << flags[0] << "\n"
                                          << out;
      EXPECT_TRUE(absl::StrContains(out, std::string(daemon) + ": ")) << out;
    }
  }
  std::string out;
  EXPECT_EQ(
      RunToExit({Bin("petrel-worker"), "--scheduler=127.0.0.1:1", "--job=nope"},
                &out),
      2)
      << out;
  EXPECT_EQ(
      RunToExit({Bin("petrel-worker"), "--scheduler=127.0.0.1:1", "--rounds=0"},
                &out),
      2)
      << out;
  // The role's own flags, on the daemon and on petrel-worker run in the
  // role by DMLC_ROLE.
  const std::vector<std::pair<std::string, std::string>> role_flags = {
      {"scheduler", "--heartbeat_timeout_s=-5"},
      {"scheduler", "--connection_grace_ms=-1"},
      {"scheduler", "--virtual_nodes=0"},
      {"scheduler", "--checkpoint_timeout_s=0"},
      {"server", "--server_threads=-1"},
      {"server", "--store_mode=nope"}};
  for (const auto& [role, flag] : role_flags) {
    for (const std::string& daemon :
         {"petrel-" + role, std::string("petrel-worker")}) {
      EXPECT_EQ(RunToExit({Bin(daemon), "--scheduler=127.0.0.1:1", flag}, &out,
                          {{"DMLC_ROLE", role}}),
                2)
          << daemon << " " << flag << "\n"
          << out;
      EXPECT_TRUE(absl::StrContains(out, flag.substr(0, flag.find('='))))
          << out;
    }
  }
}

TEST(StartupTest, UnresolvableHostFailsAtOnceNamingIt) {
  const std::vector<std::pair<std::vector<std::string>,
                              std::vector<std::pair<std::string, std::string>>>>
      cases = {
          {{Bin("petrel-worker"), "--scheduler=no-such-host.invalid:9000"}, {}},
          {{Bin("petrel-server")},
           {{"DMLC_PS_ROOT_URI", "no-such-host.invalid"},
            {"DMLC_PS_ROOT_PORT", "9000"}}},
          {{Bin("petrel-worker"), "--scheduler=127.0.0.1:9000",
            "--advertise_host=no-such-host.invalid"},
           {}},
          {{Bin("petrel-launch"), "--host=no-such-host.invalid", "--", "true"},
           {}}};
  for (const auto& [argv, env] : cases) {
    const absl::Time start = absl::Now();
    std::string out;
    EXPECT_EQ(RunToExit(argv, &out, env), 2) << argv[0] << "\n" << out;
    EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << argv[0];
    EXPECT_TRUE(absl::StrContains(out,
                                  "cannot resolve host "
                                  "'no-such-host.invalid'"))
        << out;
  }
}

TEST(StartupTest, VersionOnEveryBinaryNamesVersionCommitBuildAndCuda) {
  for (const char* binary :
       {"petrel-scheduler", "petrel-server", "petrel-worker", "petrel-launch",
        "petrel-datagen", "petrel-bench", "petrel-predict", "petrel-export"}) {
    std::string out;
    EXPECT_EQ(RunToExit({Bin(binary), "--version"}, &out), 0) << out;
    EXPECT_TRUE(absl::StartsWith(out, std::string(binary) + " ")) << out;
    EXPECT_TRUE(absl::StrContains(out, "(commit ")) << out;
    EXPECT_TRUE(absl::StrContains(out, ", CUDA o")) << out;
  }
}

TEST(StartupTest, HelpOnEveryBinaryIsItsOwnFlagsWithoutInternalsOrPaths) {
  for (const char* binary :
       {"petrel-scheduler", "petrel-server", "petrel-worker", "petrel-launch",
        "petrel-datagen", "petrel-bench", "petrel-predict", "petrel-export"}) {
    std::string out;
    EXPECT_EQ(RunToExit({Bin(binary), "--help"}, &out), 0) << out;
    EXPECT_TRUE(absl::StartsWith(out, std::string(binary) + ": ")) << out;
    EXPECT_TRUE(absl::StrContains(out, "--log_dir=")) << out;
    for (const char* internal : {"Flags from", "logtostderr", "flagfile",
                                 "stderrthreshold", "/src/", "_main.cc"}) {
      EXPECT_FALSE(absl::StrContains(out, internal))
          << binary << " --help shows " << internal << "\n"
          << out;
    }
    EXPECT_EQ(RunToExit({Bin(binary), "--helpfull"}, &out), 0) << out;
    EXPECT_TRUE(absl::StrContains(out, "logtostderr")) << out;
  }
}

TEST(StartupTest, LogDirGetsTheLogFilesAndStderrOnlyTheFailure) {
  char tmpl[] = "/tmp/petrel-logdir-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ClosedPort closed;
  std::string out;
  EXPECT_EQ(
      RunToExit({Bin("petrel-worker"),
                 absl::StrCat("--scheduler=127.0.0.1:", closed.port()),
                 "--bind=127.0.0.1", "--join_timeout_s=1", "--log_dir=" + dir},
                &out),
      1)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "petrel-worker: no answer from the "))
      << out;
  EXPECT_FALSE(absl::StrContains(out, "] worker bound port")) << out;
  std::ifstream info(dir + "/petrel-worker.INFO");
  std::stringstream text;
  text << info.rdbuf();
  EXPECT_TRUE(absl::StrContains(text.str(), "worker bound port")) << text.str();
  std::filesystem::remove_all(dir);
}

TEST(StartupTest, HelpExitsZeroAndDocumentsEachFlag) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> daemons =
      {{"petrel-scheduler",
        {"--port=0", "--num_servers=1", "--num_workers=1",
         "--join_timeout_s=", "--heartbeat_timeout_s=30",
         "--bind=", "--advertise_host=", "--metrics_port=-1", "\nScheduler (",
         "\nCluster (every node):"}},
       {"petrel-server",
        {"--scheduler=", "--port=", "--store_mode=\"sum\"", "--join_timeout_s=",
         "--bind=", "--advertise_host=", "--metrics_port=", "\nServer ("}},
       {"petrel-worker",
        {"--scheduler=", "--job=\"check\"", "--rounds=10",
         "--num_keys=", "--inflight=", "--timeout_s=", "--join_timeout_s=",
         "--bind=", "--advertise_host=", "\nWorker jobs:", "\nScheduler (",
         "--heartbeat_timeout_s=", "\nServer (", "--store_mode="}}};
  for (const auto& [daemon, flags] : daemons) {
    std::string out;
    EXPECT_EQ(RunToExit({Bin(daemon), "--help"}, &out), 0) << out;
    for (const std::string& flag : flags) {
      EXPECT_TRUE(absl::StrContains(out, flag))
          << daemon << " --help does not document " << flag << "\n"
          << out;
    }
    EXPECT_TRUE(absl::StrContains(out, "Default")) << out;
  }
}

// Runs a 1-server job whose worker is configured by `worker_env` and
// `worker_args`; returns the worker's exit code and output.
int RunWorkerWith(std::vector<std::pair<std::string, std::string>> worker_env,
                  std::vector<std::string> worker_args, std::string* out) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  DaemonCluster cluster(o);
  if (!cluster.StartScheduler().ok()) return -1;
  if (!cluster.StartNode("petrel-server").ok()) return -1;
  for (auto& [name, value] : worker_env) {
    if (value == "$PORT")
      value = absl::StrCat(cluster.scheduler_announce().port);
  }
  worker_args.insert(worker_args.begin(), Bin("petrel-worker"));
  absl::StatusOr<std::unique_ptr<Subprocess>> worker =
      StartProgram(worker_args, worker_env);
  if (!worker.ok()) return -1;
  absl::StatusOr<int> code = (*worker)->Wait(kExitTimeout);
  absl::StatusOr<std::map<std::string, int>> daemons =
      cluster.WaitAll(kExitTimeout);
  *out = (*worker)->Output() + cluster.Output();
  if (!code.ok() || !daemons.ok()) return -1;
  for (const auto& [name, c] : *daemons) {
    if (c != 0) return 100 + c;
  }
  return *code;
}

TEST(StartupTest, WorkerJoinsFromDmlcEnvironmentAlone) {
  std::string out;
  int code = RunWorkerWith({{"DMLC_ROLE", "worker"},
                            {"DMLC_PS_ROOT_URI", "127.0.0.1"},
                            {"DMLC_PS_ROOT_PORT", "$PORT"},
                            {"DMLC_NUM_SERVER", "1"},
                            {"DMLC_NUM_WORKER", "1"}},
                           {"--bind=127.0.0.1", "--timeout_s=30"}, &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(
      absl::StrContains(out, "check rank=0 keys=1000 rounds=10 ok=true"))
      << out;
}

TEST(StartupTest, FlagOverridesDmlcEnvironment) {
  // DMLC_PS_ROOT_PORT points nowhere; --scheduler must win.
  ClosedPort closed;
  std::string out;
  int code = 0;
  {
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    DaemonCluster cluster(o);
    ASSERT_TRUE(cluster.StartScheduler().ok());
    ASSERT_TRUE(cluster.StartNode("petrel-server").ok());
    absl::StatusOr<std::unique_ptr<Subprocess>> worker = StartProgram(
        {Bin("petrel-worker"), "--scheduler=" + cluster.scheduler_address(),
         "--bind=127.0.0.1", "--join_timeout_s=30"},
        {{"DMLC_ROLE", "worker"},
         {"DMLC_PS_ROOT_URI", "127.0.0.1"},
         {"DMLC_PS_ROOT_PORT", absl::StrCat(closed.port())},
         {"DMLC_NUM_SERVER", "1"},
         {"DMLC_NUM_WORKER", "1"}});
    ASSERT_TRUE(worker.ok());
    absl::StatusOr<int> c = (*worker)->Wait(kExitTimeout);
    ASSERT_TRUE(c.ok());
    code = *c;
    out = (*worker)->Output();
    EXPECT_TRUE(cluster.WaitAll(kExitTimeout).ok()) << cluster.Output();
  }
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "ok=true")) << out;
  // A role in DMLC_ROLE that contradicts a daemon that runs only its own
  // is a bad flag (petrel-worker runs any role: dmlc_env_test).
  EXPECT_EQ(RunToExit({Bin("petrel-server"), "--scheduler=127.0.0.1:1"}, &out,
                      {{"DMLC_ROLE", "worker"}}),
            2)
      << out;
  EXPECT_TRUE(absl::StrContains(
      out, "DMLC_ROLE=worker but this program runs only as a server"))
      << out;
}

}  // namespace
}  // namespace petrel

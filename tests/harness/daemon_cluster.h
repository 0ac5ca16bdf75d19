// DaemonCluster: runs the real Petrel daemons of one job (petrel-scheduler,
// petrel-server, petrel-worker or any node program) from a build tree as
// child processes on 127.0.0.1, for multi-process tests. The scheduler takes
// a free port (--port=0) and its PETREL_LISTEN line tells the port; every
// node gets --scheduler, the loopback flags and the job's counts.
//
// Also: ParseAnnounce for PETREL_LISTEN / PETREL_READY lines, HttpGet for a
// daemon's /metrics endpoint and SumMetric to read counters from it.
//
// Thread safety: not thread-safe; use from the test thread. Destroying the
// cluster SIGKILLs every process still running.
#ifndef PETREL_TESTS_HARNESS_DAEMON_CLUSTER_H_
#define PETREL_TESTS_HARNESS_DAEMON_CLUSTER_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "tools/launch/subprocess.h"

namespace petrel {

// What a daemon's PETREL_LISTEN / PETREL_READY line says. id and rank are
// -1 on the scheduler's line; metrics_port is -1 when disabled.
struct Announce {
  int port = 0;
  int metrics_port = -1;
  int id = -1;
  int rank = -1;
};

// InvalidArgument when the line lacks a numeric port.
absl::StatusOr<Announce> ParseAnnounce(const std::string& line);

// Where a process of the cluster runs: a command its argv is prefixed with
// (e.g. `ip netns exec NS`, see tests/harness/netns_lab.h; it must exec the
// program, so that signals reach it) and the address it binds and
// advertises. The default: as a child of the test, on 127.0.0.1.
struct Placement {
  std::vector<std::string> prefix;
  std::string host = "127.0.0.1";
};

class DaemonCluster {
 public:
  struct Options {
    // Directory holding the binaries. Required.
    std::string bin_dir;
    // The job's counts, passed to every daemon. Default 1 and 1.
    int num_servers = 1;
    int num_workers = 1;
    // Extra flags for every daemon (e.g. --join_timeout_s=3). Default none.
    std::vector<std::string> flags;
    // Extra flags for the scheduler only. Default none.
    std::vector<std::string> scheduler_flags;
    // Where the scheduler runs. Default: on 127.0.0.1.
    Placement scheduler_placement;
    // How long a daemon has to print its announce line. Default 60 s.
    absl::Duration announce_timeout = absl::Seconds(60);
  };

  explicit DaemonCluster(Options options);
  DaemonCluster(const DaemonCluster&) = delete;
  DaemonCluster& operator=(const DaemonCluster&) = delete;
  ~DaemonCluster() = default;

  // Starts petrel-scheduler --port=0 and reads its port from PETREL_LISTEN.
  absl::Status StartScheduler();
  // Starts bin_dir/`program` as a node of the job with `args` appended
  // (after the common flags, so they win) and `env` added, at `placement`.
  // Returns the process, owned by the cluster. REQUIRES: StartScheduler
  // succeeded.
  absl::StatusOr<Subprocess*> StartNode(
      const std::string& program, std::vector<std::string> args = {},
      std::vector<std::pair<std::string, std::string>> env = {},
      const Placement& placement = {});
  // Reads the node's PETREL_READY line.
  absl::StatusOr<Announce> WaitReady(Subprocess* node);

  // A training job's daemons, by rank; owned by the cluster.
  struct TrainingJob {
    std::vector<Subprocess*> servers;
    std::vector<Subprocess*> workers;
  };
  // Starts the scheduler, then num_servers petrel-servers (--rank=r) and
  // num_workers petrel-workers (--job=train --timeout_s=30
  // --worker_progress --rank=r), as the training fault tests run them.
  absl::StatusOr<TrainingJob> StartTrainingJob();

  Subprocess* scheduler() const { return procs_.front().proc.get(); }
  const Announce& scheduler_announce() const { return scheduler_; }
  std::string scheduler_address() const;
  // The flags a node of this job at `placement` gets (scheduler address,
  // counts, its bind and advertised address).
  std::vector<std::string> NodeFlags(const Placement& placement = {}) const;

  // Waits until every process exited, at most `timeout` in all. Returns the
  // exit codes keyed by name ("scheduler", "petrel-server#1", ...) or
  // DeadlineExceeded naming one still running.
  absl::StatusOr<std::map<std::string, int>> WaitAll(absl::Duration timeout);
  // Every process's output, each under its name, for failure messages.
  std::string Output() const;
  // OK while every one of `workers` runs; otherwise FailedPrecondition
  // saying the job ended before `event` (the fault the test injects) and to
  // raise `length` (the job's rounds or epochs), with Output().
  absl::Status StillRunning(const std::vector<Subprocess*>& workers,
                            const std::string& event,
                            const std::string& length) const;
  // The scheduler's /metrics page (started with a metrics port).
  absl::StatusOr<std::string> SchedulerMetrics() const;

 private:
  struct Proc {
    std::string name;
    std::unique_ptr<Subprocess> proc;
  };
  absl::StatusOr<Subprocess*> Start(
      std::string name, std::vector<std::string> argv,
      std::vector<std::pair<std::string, std::string>> env);

  const Options options_;
  Announce scheduler_;
  std::vector<Proc> procs_;  // the scheduler first
};

// The flags that keep a daemon on loopback: --bind and --advertise_host.
std::vector<std::string> LoopbackFlags();
// The same for address `host`.
std::vector<std::string> HostFlags(const std::string& host);

// Starts `argv` (argv[0] a path) with `env` added; output is kept.
absl::StatusOr<std::unique_ptr<Subprocess>> StartProgram(
    std::vector<std::string> argv,
    std::vector<std::pair<std::string, std::string>> env = {});

// What a program run to its end left: its exit code (-1 when it could not
// start or did not end within the timeout) and its output.
struct ProgramRun {
  int code = -1;
  std::string out;
};

// Runs `argv` (argv[0] a path) to its end, waiting at most `timeout`.
ProgramRun RunToEnd(std::vector<std::string> argv, absl::Duration timeout);

// GET http://127.0.0.1:`port``path` (HTTP/1.0); returns the body of a 200
// reply. Unavailable when the connection fails, Internal for another status.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));

// The number after `key=` in the first line of `output` that holds
// `marker` (e.g. ValueAfter(out, "final test_logloss", "test_logloss"));
// -1 when there is no such line or value.
double ValueAfter(const std::string& output, const std::string& marker,
                  const std::string& key);

// Sums the samples of Prometheus metric `name` in `text`, by the value of
// label `label` ("" for unlabelled samples).
std::map<std::string, double> SumMetric(const std::string& text,
                                        const std::string& name,
                                        const std::string& label);

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_DAEMON_CLUSTER_H_

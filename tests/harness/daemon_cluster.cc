#include "tests/harness/daemon_cluster.h"

#include <cstdlib>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "base/status_macros.h"

namespace petrel {
namespace {

int IntOr(const std::map<std::string, std::string>& kv, const std::string& key,
          int fallback) {
  auto it = kv.find(key);
  int v;
  return it != kv.end() && absl::SimpleAtoi(it->second, &v) ? v : fallback;
}

}  // namespace

absl::StatusOr<Announce> ParseAnnounce(const std::string& line) {
  std::map<std::string, std::string> kv = ParseKeyValues(line);
  Announce a;
  a.port = IntOr(kv, "port", -1);
  if (a.port <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no port in announce line '", line, "'"));
  }
  a.metrics_port = IntOr(kv, "metrics_port", -1);
  a.id = IntOr(kv, "id", -1);
  a.rank = IntOr(kv, "rank", -1);
  return a;
}

std::vector<std::string> LoopbackFlags() { return HostFlags("127.0.0.1"); }

std::vector<std::string> HostFlags(const std::string& host) {
  return {"--bind=" + host, "--advertise_host=" + host};
}

absl::StatusOr<std::unique_ptr<Subprocess>> StartProgram(
    std::vector<std::string> argv,
    std::vector<std::pair<std::string, std::string>> env) {
  Subprocess::Options options;
  options.argv = std::move(argv);
  options.env = std::move(env);
  return Subprocess::Start(std::move(options));
}

ProgramRun RunToEnd(std::vector<std::string> argv, absl::Duration timeout) {
  ProgramRun run;
  absl::StatusOr<std::unique_ptr<Subprocess>> p = StartProgram(std::move(argv));
  if (!p.ok()) return run;
  absl::StatusOr<int> code = (*p)->Wait(timeout);
  run.code = code.ok() ? *code : -1;
  run.out = (*p)->Output();
  return run;
}

DaemonCluster::DaemonCluster(Options options) : options_(std::move(options)) {}

absl::StatusOr<Subprocess*> DaemonCluster::Start(
    std::string name, std::vector<std::string> argv,
    std::vector<std::pair<std::string, std::string>> env) {
  absl::StatusOr<std::unique_ptr<Subprocess>> proc =
      StartProgram(std::move(argv), std::move(env));
  if (!proc.ok()) return proc.status();
  procs_.push_back(Proc{std::move(name), *std::move(proc)});
  return procs_.back().proc.get();
}

absl::Status DaemonCluster::StartScheduler() {
  std::vector<std::string> argv = options_.scheduler_placement.prefix;
  for (std::string a :
       {options_.bin_dir + "/petrel-scheduler", std::string("--port=0"),
        absl::StrCat("--num_servers=", options_.num_servers),
        absl::StrCat("--num_workers=", options_.num_workers)}) {
    argv.push_back(std::move(a));
  }
  for (const std::string& f : HostFlags(options_.scheduler_placement.host)) {
    argv.push_back(f);
  }
  for (const std::string& f : options_.flags) argv.push_back(f);
  for (const std::string& f : options_.scheduler_flags) argv.push_back(f);
  absl::StatusOr<Subprocess*> proc = Start("scheduler", std::move(argv), {});
  if (!proc.ok()) return proc.status();
  absl::StatusOr<std::string> line =
      (*proc)->WaitForLine("PETREL_LISTEN ", options_.announce_timeout);
  if (!line.ok()) return line.status();
  absl::StatusOr<Announce> announce = ParseAnnounce(*line);
  if (!announce.ok()) return announce.status();
  scheduler_ = *announce;
  return absl::OkStatus();
}

std::string DaemonCluster::scheduler_address() const {
  return absl::StrCat(options_.scheduler_placement.host, ":", scheduler_.port);
}

std::vector<std::string> DaemonCluster::NodeFlags(
    const Placement& placement) const {
  std::vector<std::string> flags = {
      "--scheduler=" + scheduler_address(),
      absl::StrCat("--num_servers=", options_.num_servers),
      absl::StrCat("--num_workers=", options_.num_workers)};
  for (const std::string& f : HostFlags(placement.host)) flags.push_back(f);
  for (const std::string& f : options_.flags) flags.push_back(f);
  return flags;
}

absl::StatusOr<Subprocess*> DaemonCluster::StartNode(
    const std::string& program, std::vector<std::string> args,
    std::vector<std::pair<std::string, std::string>> env,
    const Placement& placement) {
  std::vector<std::string> argv = placement.prefix;
  argv.push_back(options_.bin_dir + "/" + program);
  for (const std::string& f : NodeFlags(placement)) argv.push_back(f);
  for (std::string& a : args) argv.push_back(std::move(a));
  return Start(absl::StrCat(program, "#", procs_.size()), std::move(argv),
               std::move(env));
}

absl::StatusOr<DaemonCluster::TrainingJob> DaemonCluster::StartTrainingJob() {
  PETREL_RETURN_IF_ERROR(StartScheduler());
  TrainingJob job;
  for (int rank = 0; rank < options_.num_servers; ++rank) {
    PETREL_ASSIGN_OR_RETURN(
        Subprocess * server,
        StartNode("petrel-server", {absl::StrCat("--rank=", rank)}));
    job.servers.push_back(server);
  }
  for (int rank = 0; rank < options_.num_workers; ++rank) {
    PETREL_ASSIGN_OR_RETURN(
        Subprocess * worker,
        StartNode("petrel-worker",
                  {"--job=train", "--timeout_s=30", "--worker_progress",
                   absl::StrCat("--rank=", rank)}));
    job.workers.push_back(worker);
  }
  return job;
}

absl::StatusOr<Announce> DaemonCluster::WaitReady(Subprocess* node) {
  absl::StatusOr<std::string> line =
      node->WaitForLine("PETREL_READY ", options_.announce_timeout);
  if (!line.ok()) return line.status();
  return ParseAnnounce(*line);
}

absl::StatusOr<std::map<std::string, int>> DaemonCluster::WaitAll(
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::map<std::string, int> codes;
  for (Proc& p : procs_) {
    absl::StatusOr<int> code =
        p.proc->Wait(std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (!code.ok()) {
      return absl::DeadlineExceededError(absl::StrCat(
          p.name, " still running after ", absl::FormatDuration(timeout), ": ",
          code.status().message()));
    }
    codes[p.name] = *code;
  }
  return codes;
}

std::string DaemonCluster::Output() const {
  std::string out;
  for (const Proc& p : procs_) {
    absl::StrAppend(&out, "----- ", p.name, " -----\n", p.proc->Output());
  }
  return out;
}

absl::Status DaemonCluster::StillRunning(
    const std::vector<Subprocess*>& workers, const std::string& event,
    const std::string& length) const {
  for (Subprocess* w : workers) {
    if (w->Wait(absl::ZeroDuration()).ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the job ended before ", event, ": raise ", length, "\n", Output()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DaemonCluster::SchedulerMetrics() const {
  return HttpGet(scheduler_.metrics_port, "/metrics");
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to port ", port));
  }
  std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  bool sent = write(fd, request.data(), request.size()) ==
              static_cast<ssize_t>(request.size());
  std::string reply;
  char buf[4096];
  for (ssize_t n; sent && (n = read(fd, buf, sizeof(buf))) > 0;) {
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t body = reply.find("\r\n\r\n");
  if (!absl::StartsWith(reply, "HTTP/1.") || body == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("no HTTP reply from port ", port, ": '", reply, "'"));
  }
  if (reply.find(" 200 ") > reply.find("\r\n")) {
    return absl::InternalError(
        absl::StrCat("GET ", path, ": ", reply.substr(0, reply.find("\r\n"))));
  }
  return reply.substr(body + 4);
}

double ValueAfter(const std::string& output, const std::string& marker,
                  const std::string& key) {
  size_t line = output.find(marker);
  if (line == std::string::npos) return -1;
  size_t end = output.find('\n', line);
  std::map<std::string, std::string> kv =
      ParseKeyValues(output.substr(line, end - line));
  double v = -1;
  if (!absl::SimpleAtod(kv[key], &v)) return -1;
  return v;
}

std::map<std::string, double> SumMetric(const std::string& text,
                                        const std::string& name,
                                        const std::string& label) {
  std::map<std::string, double> sums;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name) || line.size() <= name.size()) continue;
    char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    std::string key;
    std::string needle = absl::StrCat(label, "=\"");
    size_t at = label.empty() ? std::string::npos : line.find(needle);
    if (at != std::string::npos) {
      size_t begin = at + needle.size();
      key = std::string(line.substr(begin, line.find('"', begin) - begin));
    }
    double value;
    size_t space = line.rfind(' ');
    if (space != absl::string_view::npos &&
        absl::SimpleAtod(line.substr(space + 1), &value)) {
      sums[key] += value;
    }
  }
  return sums;
}

}  // namespace petrel

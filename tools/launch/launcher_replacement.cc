// Launcher: replacement servers (Options::replace_dead_servers,
// docs/failures.md "Replacement servers"). A server process killed by a
// signal is replaced once the scheduler declared it dead (its line "node ID
// (server RANK at HOST:PORT): its key ranges fail over to ...", or, for a
// replacement that died copying, "...: a replacement that died while
// copying ..."), not before: the scheduler takes a replacement only for a dead
// rank. The replacement is petrel-server with the dead one's arguments (its
// rank among them), so it takes that rank and copies its ranges.
//
// And a restarted scheduler (Options::restart_killed_scheduler,
// docs/failures.md "The scheduler's death"): petrel-scheduler with its
// arguments, --recover and the port the dead one announced, which the
// nodes reconnect to; they rejoin it and the job goes on.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "tools/launch/launcher.h"

namespace petrel {
namespace {

constexpr char kFailover[] = ": its key ranges fail over to ";
// A replacement that died before it caught up: its rank is dead again.
constexpr char kReplacementLost[] = ": a replacement that died while copying";
constexpr char kServer[] = "(server ";

}  // namespace

void Launcher::NoteDeadServer(const std::string& line) {
  size_t failover = line.find(kFailover);
  if (failover == std::string::npos) failover = line.find(kReplacementLost);
  if (failover == std::string::npos) return;
  const size_t at = line.rfind(kServer, failover);
  if (at == std::string::npos) return;
  const size_t begin = at + sizeof(kServer) - 1;
  const size_t end = line.find(' ', begin);
  int rank = -1;
  if (end == std::string::npos || end > failover ||
      !absl::SimpleAtoi(absl::string_view(line).substr(begin, end - begin),
                        &rank) ||
      rank < 0 || rank >= options_.num_servers) {
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    dead_servers_.push_back(rank);
  }
  NotifyEvent();
}

void Launcher::StartReplacements() {
  std::vector<int> dead;
  {
    absl::MutexLock lock(&mu_);
    dead.swap(dead_servers_);
  }
  std::vector<int> waiting;  // declared dead, its process not gone yet
  for (int rank : dead) {
    if (static_cast<size_t>(rank) >= server_starts_.size()) continue;
    ServerStart& start = server_starts_[rank];
    const Child& old = children_[start.child];
    if (!old.exit_code.has_value()) {
      waiting.push_back(rank);
      continue;
    }
    if (!old.lost || failed_.has_value() || pending_signal_ != 0) continue;
    if (replacements_ >= options_.max_server_replacements) {
      PrintStatus(absl::StrCat("server ", rank, " is not replaced: ",
                               replacements_, " replacements already (most ",
                               options_.max_server_replacements, ")"));
      continue;
    }
    ++replacements_;
    const std::string name =
        absl::StrCat("server ", rank, " replacement ", replacements_);
    PrintStatus(absl::StrCat("starting ", name, " for the dead server ", rank));
    // Known to child_env (its CURVE keys) by the rank's name.
    absl::StatusOr<Child> child =
        NewChild(name, absl::StrCat("server ", rank), false, false, start.argv,
                 {}, start.remote);
    if (!child.ok()) {
      PrintStatus(absl::StrCat(name, ": ", child.status().message()));
      continue;
    }
    start.child = children_.size();
    children_.push_back(*std::move(child));
  }
  if (!waiting.empty()) {
    absl::MutexLock lock(&mu_);
    dead_servers_.insert(dead_servers_.end(), waiting.begin(), waiting.end());
  }
}

bool Launcher::RestartScheduler(int code) {
  if (!options_.restart_killed_scheduler || stopping_ || failed_.has_value() ||
      pending_signal_ != 0) {
    return false;
  }
  // Nothing to go on with: no worker runs (the job was ending), or the
  // nodes were never told where the scheduler is.
  if (AllExited(/*workers_only=*/true)) return false;
  int port = 0;
  {
    absl::MutexLock lock(&mu_);
    port = listen_port_;
  }
  if (port == 0) return false;
  const std::string why = ExitReason(children_[0], code);
  if (scheduler_restarts_ >= options_.max_scheduler_restarts) {
    PrintStatus(absl::StrCat("the scheduler was ", why,
                             " and is not restarted: ", scheduler_restarts_,
                             " restarts already (most ",
                             options_.max_scheduler_restarts, ")"));
    return false;
  }
  ++scheduler_restarts_;
  std::vector<std::string> argv = scheduler_argv_;
  argv.push_back(absl::StrCat("--port=", port));
  argv.push_back("--recover");
  const std::string name =
      absl::StrCat("scheduler restart ", scheduler_restarts_);
  PrintStatus(absl::StrCat("the scheduler was ", why, "; starting ", name,
                           " with --recover on port ", port,
                           " (the nodes wait for it and rejoin)"));
  absl::StatusOr<Child> child = NewChild(name, "scheduler", false, true,
                                         std::move(argv), {}, SchedulerHost());
  if (!child.ok()) {
    PrintStatus(absl::StrCat(name, ": ", child.status().message()));
    return false;
  }
  children_[0] = *std::move(child);
  return true;
}

}  // namespace petrel

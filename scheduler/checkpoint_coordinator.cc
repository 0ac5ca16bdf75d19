#include "scheduler/checkpoint_coordinator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "job/checkpoint_protocol.h"

namespace petrel {
namespace {

constexpr int kDefaultKeep = 3;

}  // namespace

CheckpointCoordinator::CheckpointCoordinator(
    Postoffice* postoffice, CheckpointCoordinatorOptions options,
    EndJob end_job)
    : postoffice_(postoffice),
      options_(std::move(options)),
      end_job_(std::move(end_job)),
      app_(kControlApp, 0, postoffice) {}

CheckpointCoordinator::~CheckpointCoordinator() {
  Stop();
  app_.Stop();  // its handlers use the members destroyed before it
}

absl::Status CheckpointCoordinator::Start() {
  app_.set_request_handler(
      [this](const SimpleData& d, SimpleApp* app) { Handle(d, app); });
  app_.set_response_handler([this](const SimpleData& d, SimpleApp*) {
    absl::MutexLock lock(&mu_);
    replies_[d.timestamp].push_back(d);
  });
  PETREL_RETURN_IF_ERROR(app_.Start());
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void CheckpointCoordinator::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void CheckpointCoordinator::Handle(const SimpleData& d, SimpleApp* app) {
  app->Response(d).IgnoreError();
  if (d.duplicate) return;
  std::string who = absl::StrCat(IsServerId(d.sender) ? "server " : "worker ",
                                 IdToRank(d.sender));
  if (d.head == kCheckpoint) {
    RequestCheckpoint(d.body);
  } else if (d.head == kStopJob) {
    LOG(INFO) << who << " asks to stop the job: " << d.body;
    RequestStop(absl::StrCat(d.body, " (", who, ")"));
  } else {
    LOG_EVERY_T(WARNING, 1.0)
        << "unknown control request " << d.head << " from " << who;
  }
}

void CheckpointCoordinator::RequestCheckpoint(const std::string& reason) {
  if (options_.job.checkpoint().dir().empty()) return;
  absl::MutexLock lock(&mu_);
  // One pending request per reason is enough.
  if (std::find(requests_.begin(), requests_.end(), reason) == requests_.end())
    requests_.push_back(reason);
}

void CheckpointCoordinator::RequestStop(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (!stop_request_.has_value()) stop_request_ = reason;
}

void CheckpointCoordinator::OnWorkersDone() {
  absl::MutexLock lock(&mu_);
  workers_done_ = true;
}

void CheckpointCoordinator::OnStartLoaded() {
  absl::MutexLock lock(&mu_);
  start_loaded_ = true;
}

int64_t CheckpointCoordinator::completed() const {
  absl::MutexLock lock(&mu_);
  return completed_;
}

int64_t CheckpointCoordinator::failed() const {
  absl::MutexLock lock(&mu_);
  return failed_;
}

bool CheckpointCoordinator::WaitForAttempts(int64_t n,
                                            absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return completed_ + failed_ >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

CheckpointCoordinator::Action CheckpointCoordinator::NextAction(
    std::string* reason) {
  const float every_s = options_.job.checkpoint().every_seconds();
  const bool by_time = every_s > 0 && !options_.job.checkpoint().dir().empty();
  absl::Time next_timed = absl::InfiniteFuture();
  absl::MutexLock lock(&mu_);
  while (true) {
    if (stop_) return Action::kNone;
    if (workers_done_) return Action::kEnd;
    if (stop_request_.has_value()) {
      *reason = *stop_request_;
      return Action::kStop;
    }
    if (!StartLoadedLocked()) {
      // Requests stay queued; the timer starts once the rows are in.
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](CheckpointCoordinator* c)
                                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
                                      return c->stop_ || c->workers_done_ ||
                                             c->stop_request_.has_value() ||
                                             c->start_loaded_;
                                    },
                               this),
                           absl::Milliseconds(100));
      continue;
    }
    if (!requests_.empty()) {
      *reason = requests_.front();
      requests_.pop_front();
      return Action::kCheckpoint;
    }
    absl::Time now = absl::Now();
    if (by_time && !postoffice_->nodes().empty()) {
      if (next_timed == absl::InfiniteFuture()) {
        next_timed = now + absl::Seconds(every_s);
      } else if (now >= next_timed) {
        *reason = "every_seconds";
        return Action::kCheckpoint;
      }
    }
    // Wakes for requests at once, for the timer (and to notice that the
    // cluster formed) within 100 ms.
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](CheckpointCoordinator* c)
                                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
                                    return c->stop_ || c->workers_done_ ||
                                           c->stop_request_.has_value() ||
                                           !c->requests_.empty();
                                  },
                             this),
                         absl::Milliseconds(100));
  }
}

void CheckpointCoordinator::Loop() {
  while (!ended_) {
    std::string reason;
    Action action = NextAction(&reason);
    switch (action) {
      case Action::kNone:
        return;
      case Action::kCheckpoint:
        if (absl::Status s = Checkpoint(reason); !s.ok()) End(s);
        break;
      case Action::kEnd:
        End(options_.job.checkpoint().dir().empty() ? absl::OkStatus()
                                                    : Checkpoint("end"));
        break;
      case Action::kStop: {
        std::string outcome = "no checkpoint directory";
        bool loaded;
        {
          absl::MutexLock lock(&mu_);
          loaded = StartLoadedLocked();
        }
        if (!options_.job.checkpoint().dir().empty() && !loaded) {
          outcome =
              absl::StrCat("no checkpoint taken: the servers had not loaded ",
                           options_.job.checkpoint().restore_from().empty()
                               ? options_.job.checkpoint().warm_start_from()
                               : options_.job.checkpoint().restore_from(),
                           " yet");
          LOG(WARNING) << outcome;
          Ask(kStop, absl::StrCat("job stopped: ", reason, "; ", outcome),
              kWorkerGroup)
              .IgnoreError();
        } else if (!options_.job.checkpoint().dir().empty()) {
          absl::StatusOr<std::string> path =
              TakeCheckpoint("signal", /*then_stop=*/true, reason);
          outcome = path.ok() ? absl::StrCat("checkpoint ", *path)
                              : "the checkpoint failed";
        } else {
          Ask(kStop, absl::StrCat("job stopped: ", reason, "; ", outcome),
              kWorkerGroup)
              .IgnoreError();
        }
        End(absl::AbortedError(
            absl::StrCat("job stopped: ", reason, "; ", outcome)));
        break;
      }
    }
  }
}

void CheckpointCoordinator::End(const absl::Status& result) {
  if (ended_) return;
  ended_ = true;
  end_job_(result);
}

absl::Status CheckpointCoordinator::Checkpoint(const std::string& reason) {
  absl::StatusOr<std::string> path = TakeCheckpoint(reason, false, "");
  if (path.ok() || options_.job.checkpoint().on_failure() !=
                       pb::CheckpointConfig::ON_FAILURE_STOP) {
    return absl::OkStatus();
  }
  return absl::AbortedError(absl::StrCat("checkpoint (", reason,
                                         ") failed: ", path.status().message(),
                                         " (checkpoint.on_failure: STOP)"));
}

absl::StatusOr<std::vector<SimpleData>> CheckpointCoordinator::Ask(
    int head, const std::string& body, int group) {
  // Workers that died are not asked (scheduler/worker_recovery.h).
  std::vector<int> recipients = {group};
  if (group == kWorkerGroup && live_workers_) recipients = live_workers_();
  // Nor servers whose ranges failed over to a replica.
  if (group == kServerGroup && live_servers_) recipients = live_servers_();
  std::vector<int> requests;
  for (int id : recipients) requests.push_back(app_.Request(head, body, id));
  // Resumes and stops are answered at once; pauses and saves may take long.
  // A stop is a notice before the TERMINATE that follows anyway: a worker
  // that died a moment ago (not declared dead yet) must not hold the job's
  // end past a signal's grace period.
  const absl::Duration timeout =
      head == kPause || head == kSave ? options_.timeout
      : head == kStop ? std::min(options_.timeout, kStopAckTimeout)
                      : std::min(options_.timeout, absl::Seconds(10));
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status s;
  // Sliced, so that Stop is not held up by a wait.
  for (int ts : requests) {
    while (true) {
      s = app_.Wait(ts, absl::Milliseconds(100));
      if (s.ok() || !absl::IsDeadlineExceeded(s) || absl::Now() > deadline) {
        break;
      }
      absl::MutexLock lock(&mu_);
      if (stop_) break;
    }
    if (!s.ok()) break;
  }
  absl::MutexLock lock(&mu_);
  std::vector<SimpleData> replies;
  for (int ts : requests) {
    for (SimpleData& d : replies_[ts]) replies.push_back(std::move(d));
    replies_.erase(ts);
  }
  if (absl::IsDeadlineExceeded(s)) {
    return absl::DeadlineExceededError(
        absl::StrCat(head == kPause  ? "the workers did not pause"
                     : head == kSave ? "the servers did not save"
                                     : "the workers did not answer",
                     " within ", absl::FormatDuration(timeout), " (",
                     replies.size(), " answered)"));
  }
  if (!s.ok()) return s;
  return replies;
}

absl::StatusOr<std::vector<pb::WorkerPosition>>
CheckpointCoordinator::PauseWorkers() {
  PETREL_ASSIGN_OR_RETURN(std::vector<SimpleData> replies,
                          Ask(kPause, "", kWorkerGroup));
  std::vector<pb::WorkerPosition> positions;
  for (const SimpleData& d : replies) {
    absl::StatusOr<pb::WorkerPosition> p = DecodeWorkerPosition(d.body);
    if (!p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker ", IdToRank(d.sender), " sent a malformed position"));
    }
    p->set_rank(IdToRank(d.sender));
    positions.push_back(*std::move(p));
  }
  std::sort(positions.begin(), positions.end(),
            [](const pb::WorkerPosition& a, const pb::WorkerPosition& b) {
              return a.rank() < b.rank();
            });
  return positions;
}

absl::Status CheckpointCoordinator::SaveServers(
    const std::string& path, pb::CheckpointManifest* manifest) {
  PETREL_ASSIGN_OR_RETURN(std::vector<SimpleData> replies,
                          Ask(kSave, path, kServerGroup));
  std::sort(replies.begin(), replies.end(),
            [](const SimpleData& a, const SimpleData& b) {
              return a.sender < b.sender;
            });
  for (const SimpleData& d : replies) {
    absl::StatusOr<pb::CheckpointManifest> part = DecodeSaveReply(d.body);
    if (!part.ok()) {
      return absl::Status(part.status().code(),
                          absl::StrCat("server ", IdToRank(d.sender), ": ",
                                       part.status().message()));
    }
    if (manifest->tables_size() == 0) {
      *manifest->mutable_tables() = part->tables();
    }
    for (const pb::CheckpointFile& f : part->files()) {
      *manifest->add_files() = f;
    }
  }
  return absl::OkStatus();
}

void CheckpointCoordinator::FillManifest(uint64_t id, const std::string& reason,
                                         pb::CheckpointManifest* manifest) {
  manifest->set_format_version(kCheckpointFormatVersion);
  manifest->set_id(id);
  manifest->set_created_unix_ms(absl::ToUnixMillis(absl::Now()));
  manifest->set_reason(reason);
  *manifest->mutable_job() = options_.job;
  manifest->set_num_servers(postoffice_->num_servers());
  KeyRangeMap ranges = key_ranges_ ? key_ranges_() : postoffice_->key_ranges();
  for (uint64_t b : ranges.begins()) manifest->add_range_begins(b);
  for (int32_t o : ranges.owners()) manifest->add_range_owners(o);
}

void CheckpointCoordinator::ReleaseWorkers(uint64_t id, bool then_stop,
                                           const std::string& stop_line) {
  absl::Status released = then_stop
                              ? Ask(kStop, stop_line, kWorkerGroup).status()
                              : Ask(kResume, "", kWorkerGroup).status();
  if (!released.ok()) {
    LOG(WARNING) << "releasing the workers after checkpoint " << id << ": "
                 << released.message();
  }
}

absl::StatusOr<std::string> CheckpointCoordinator::TakeCheckpoint(
    const std::string& reason, bool then_stop, const std::string& stop_reason) {
  const std::string& root = options_.job.checkpoint().dir();
  const absl::Time start = absl::Now();
  if (postoffice_->nodes().empty()) {
    LOG(ERROR) << "no checkpoint (" << reason
               << "): the cluster has not formed";
    if (then_stop) {
      Ask(kStop, absl::StrCat("job stopped: ", stop_reason), kWorkerGroup)
          .IgnoreError();
    }
    absl::MutexLock lock(&mu_);
    ++failed_;
    return absl::FailedPreconditionError("the cluster has not formed");
  }
  if (next_id_ == 0) {
    absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(root);
    next_id_ = ids.ok() && !ids->empty() ? ids->back() + 1 : 1;
  }
  const uint64_t id = next_id_++;
  std::string path = CheckpointPath(root, id);
  absl::Status status;
  absl::Duration paused;
  pb::CheckpointManifest manifest;
  bool workers_paused = false;
  absl::StatusOr<std::string> created = CreateCheckpointDir(root, id);
  if (!created.ok()) {
    status = created.status();
  } else {
    path = *created;
    absl::StatusOr<std::vector<pb::WorkerPosition>> positions = PauseWorkers();
    workers_paused = true;  // (those that answered; resumed below anyway)
    const absl::Time pause_done = absl::Now();
    if (!positions.ok()) {
      status = positions.status();
    } else {
      for (pb::WorkerPosition& p : *positions) *manifest.add_workers() = p;
      status = SaveServers(path, &manifest);
    }
    if (status.ok()) {
      FillManifest(id, reason, &manifest);
      status = WriteManifest(path, manifest);
    }
    paused = absl::Now() - pause_done;
  }
  if (workers_paused || then_stop) {
    ReleaseWorkers(id, then_stop,
                   absl::StrCat("job stopped: ", stop_reason,
                                status.ok() ? "; checkpoint " + path
                                            : "; the checkpoint failed"));
  }
  if (status.ok()) {
    absl::Status retained =
        RetainCheckpoints(root, options_.job.checkpoint().keep() > 0
                                    ? options_.job.checkpoint().keep()
                                    : kDefaultKeep);
    if (!retained.ok()) {
      LOG(WARNING) << "removing old checkpoints in " << root << ": "
                   << retained.message();
    }
  }
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    ++failed_;
    LOG(ERROR) << "checkpoint " << path << " (" << reason
               << ") failed: " << status.message()
               << "; the previous checkpoints are intact";
    return status;
  }
  ++completed_;
  uint64_t bytes = 0;
  for (const pb::CheckpointFile& f : manifest.files()) bytes += f.bytes();
  LOG(INFO) << "checkpoint " << id << " (" << reason << ") complete: " << path
            << ", " << manifest.files_size() << " files, " << bytes
            << " bytes in " << absl::FormatDuration(absl::Now() - start)
            << " (training paused " << absl::FormatDuration(paused) << ")";
  return path;
}

}  // namespace petrel

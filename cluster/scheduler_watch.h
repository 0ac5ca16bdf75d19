// SchedulerWatch: a node's verdict on its scheduler. The scheduler answers
// every heartbeat; a node that heard nothing from it for `silence` (three
// heartbeat intervals) counts it as lost: it goes on training (pushes and
// pulls do not pass through the scheduler) and asks to rejoin every
// `rejoin_interval`, so that a scheduler restarted with --recover rebuilds
// the node table from the nodes' own ids. A scheduler that accepts the
// rejoin ends the loss (Rejoined); one that stayed away for `grace` since
// it was last heard ends the node (kGiveUp), so that no wait on the
// scheduler (barriers, TERMINATE) lasts longer than that.
//
// The class does no I/O and reads no clock: the caller passes the time, so
// tests drive it directly. Thread safety: not thread-safe; the Postoffice
// guards it with its mutex.
#ifndef PETREL_CLUSTER_SCHEDULER_WATCH_H_
#define PETREL_CLUSTER_SCHEDULER_WATCH_H_

#include <algorithm>

#include "absl/time/time.h"

namespace petrel {

struct SchedulerWatchOptions {
  // Nothing heard for this long: the scheduler is lost. > 0.
  absl::Duration silence = absl::Seconds(3);
  // Lost for this long (counted from when it was last heard): give up. >
  // silence.
  absl::Duration grace = absl::Seconds(60);
  // How often a node that lost the scheduler asks to rejoin. > 0.
  absl::Duration rejoin_interval = absl::Seconds(1);
};

class SchedulerWatch {
 public:
  enum class Action {
    kNone,
    kLost,    // just lost: log it, then ask to rejoin
    kRejoin,  // still lost: ask to rejoin again
    kGiveUp,  // lost for `grace`: stop (reported once)
  };

  // `now`: when the watch starts (counts as heard).
  SchedulerWatch(SchedulerWatchOptions options, absl::Time now)
      : options_(options), last_heard_(now) {}

  // Any message from the scheduler arrived.
  void Heard(absl::Time now) { last_heard_ = std::max(last_heard_, now); }
  // The scheduler accepted this node's rejoin; returns how long it had been
  // gone (since last heard before the loss). No-op unless lost.
  absl::Duration Rejoined(absl::Time now);
  // What to do at `now`; call on every tick.
  Action Tick(absl::Time now);

  bool lost() const { return lost_; }
  bool gave_up() const { return gave_up_; }
  // How long the scheduler has been silent at `now`.
  absl::Duration silent_for(absl::Time now) const { return now - last_heard_; }
  const SchedulerWatchOptions& options() const { return options_; }

 private:
  const SchedulerWatchOptions options_;
  absl::Time last_heard_;
  bool lost_ = false;
  bool gave_up_ = false;
  absl::Time lost_since_;  // last heard before the loss
  absl::Time last_rejoin_;
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_SCHEDULER_WATCH_H_

#include "cluster/scheduler_watch.h"

#include <algorithm>

namespace petrel {

absl::Duration SchedulerWatch::Rejoined(absl::Time now) {
  if (!lost_ || gave_up_) return absl::ZeroDuration();
  lost_ = false;
  last_heard_ = std::max(last_heard_, now);
  return now - lost_since_;
}

SchedulerWatch::Action SchedulerWatch::Tick(absl::Time now) {
  if (gave_up_) return Action::kNone;
  if (!lost_) {
    if (now - last_heard_ < options_.silence) return Action::kNone;
    lost_ = true;
    lost_since_ = last_heard_;
    last_rejoin_ = now;
    return Action::kLost;
  }
  if (now - lost_since_ >= options_.grace) {
    gave_up_ = true;
    return Action::kGiveUp;
  }
  if (now - last_rejoin_ >= options_.rejoin_interval) {
    last_rejoin_ = now;
    return Action::kRejoin;
  }
  return Action::kNone;
}

}  // namespace petrel

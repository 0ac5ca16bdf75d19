// PS-Lite compatibility (docs/pslite.md): the basic types and macros of
// PS-Lite's ps/base.h. Keys are uint64 as in Petrel; logging and the CHECK
// macros are glog's, which PS-Lite's own logging mirrors.
#ifndef PETREL_PSLITE_INCLUDE_PS_BASE_H_
#define PETREL_PSLITE_INCLUDE_PS_BASE_H_

#include <cstdint>
#include <limits>

#include "glog/logging.h"

#include "store/kv_pairs.h"
#include "van/message.h"

namespace ps {

using Key = petrel::Key;
// The largest key: PS-Lite's programs spread keys over [0, kMaxKey].
static constexpr Key kMaxKey = std::numeric_limits<Key>::max();

// Node groups and the scheduler's id, as in PS-Lite: a message to a group
// goes to each of its nodes, and groups add (kServerGroup + kWorkerGroup).
static constexpr int kScheduler = petrel::kSchedulerId;
static constexpr int kServerGroup = petrel::kServerGroup;
static constexpr int kWorkerGroup = petrel::kWorkerGroup;

}  // namespace ps

// PS-Lite's "log this line" macro: a line on stderr, whatever the log level.
#ifndef LL
#define LL LOG(ERROR)
#endif

#endif  // PETREL_PSLITE_INCLUDE_PS_BASE_H_

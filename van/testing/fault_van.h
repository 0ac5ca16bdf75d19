// FaultVan: a test-only Van that wraps another Van and injects faults into
// the messages this node sends: drop, duplicate, delay, reorder and corrupt.
// It replaces PS-Lite's PS_DROP_MSG switch with a seam: tests wrap each
// node's LoopbackVan (or ZmqVan) in a FaultVan and check that the layers
// above (Customer resends, duplicate detection, the wire decoder) cope.
//
// Faults are drawn from a deterministic RNG seeded by FaultOptions::seed, so
// the same sequence of Send calls meets the same faults. Receiving is not
// touched: every message still goes through the inner van's decoder, which
// is what corrupt faults exercise.
//
//   auto van = std::make_unique<FaultVan>(
//       std::make_unique<LoopbackVan>(&network, van_options, &metrics),
//       fault_options);
//
// Thread safety: as Van. Delayed and reordered messages are released by a
// background thread that Start starts and Stop joins; messages still held at
// Stop are discarded (as a network would lose them).
#ifndef PETREL_VAN_TESTING_FAULT_VAN_H_
#define PETREL_VAN_TESTING_FAULT_VAN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "van/van.h"

namespace petrel {

// How a corrupt fault damages a message. Every kind but kBadKvCounts,
// kFlipDataByte and kFlipMetaByte yields a message the receiver's decoder
// must reject; kBadKvCounts one that the KV layer (kv/kv_codec.h) rejects.
enum class CorruptKind {
  kBadDataType,    // a data frame's type becomes an unknown value
  kTruncateFrame,  // a multi-byte frame loses its last byte
  kMissingFrame,   // the meta lists one more data type than there are frames
  kSpoofSender,    // the sender id is not this node's
  kBadKvCounts,    // a kv message's values no longer divide over its keys
  kFlipDataByte,   // one byte of a data frame flips (may decode fine)
  kFlipMetaByte,   // one byte of the serialized meta flips, if it reparses
};

struct FaultOptions {
  // Probability of each fault per sent message, each drawn independently.
  // Range 0 .. 1; default 0 (no fault).
  double drop_probability = 0;
  double duplicate_probability = 0;
  double delay_probability = 0;
  double reorder_probability = 0;
  double corrupt_probability = 0;
  // A delayed message is held for a uniform random time in [0, max_delay].
  // Default 20 ms.
  absl::Duration max_delay = absl::Milliseconds(20);
  // A message held for reordering is sent after the next message to the
  // same recipient, or alone after this long. Default 20 ms.
  absl::Duration reorder_max_hold = absl::Milliseconds(20);
  // Kinds a corrupt fault picks from (uniformly among those that apply to
  // the message). Default: all.
  std::vector<CorruptKind> corrupt_kinds = {
      CorruptKind::kBadDataType,  CorruptKind::kTruncateFrame,
      CorruptKind::kMissingFrame, CorruptKind::kSpoofSender,
      CorruptKind::kBadKvCounts,  CorruptKind::kFlipDataByte,
      CorruptKind::kFlipMetaByte};
  // When true, only data messages (no meta.control) meet faults, so joins,
  // barriers, heartbeats and termination still work. Default true.
  bool data_messages_only = true;
  // Seed of the fault RNG. Default 1.
  uint64_t seed = 1;
};

// Counts of faults injected so far.
struct FaultStats {
  int64_t sent = 0;  // messages given to Send
  int64_t dropped = 0;
  int64_t duplicated = 0;
  int64_t delayed = 0;
  int64_t reordered = 0;
  int64_t corrupted = 0;
};

class FaultVan : public Van {
 public:
  // Takes ownership of `inner`, which must not be started. Uses the inner
  // van's options, metrics registry and transport identity.
  FaultVan(std::unique_ptr<Van> inner, FaultOptions options);
  ~FaultVan() override;

  absl::Status Start(MessageHandler on_message, TickHandler on_tick) override;
  void Stop() override;
  int port() const override { return inner_->port(); }
  void Connect(const pb::Node& node) override;
  // Applies the faults drawn for `msg`, then passes it (or its copies) to
  // the inner van now or later. Returns FailedPrecondition before Start or
  // after Stop; a dropped message returns OK.
  absl::Status Send(Message msg) override;

  // Changes the fault options from now on (e.g. faults only after the
  // cluster formed) and restarts the RNG from options.seed.
  void set_options(FaultOptions options);
  FaultStats stats() const;
  Van* inner() const { return inner_.get(); }

 private:
  struct Held {
    Message msg;
    bool reorder = false;  // held for reordering (else delayed)
  };

  // Returns false if `kind` does not apply to `msg`.
  bool Corrupt(CorruptKind kind, Message* msg)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CorruptSomehow(Message* msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Roll(double probability) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t Uniform(size_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Hold(absl::Time due, Message msg, bool reorder)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseLoop();
  // Pushes this van's id and role into the inner van, whose decoder uses
  // them (Postoffice sets them on this van only).
  void SyncIdentity();
  void PassOn(Message msg);

  const std::unique_ptr<Van> inner_;
  Counter* injected_drop_;
  Counter* injected_duplicate_;
  Counter* injected_delay_;
  Counter* injected_reorder_;
  Counter* injected_corrupt_;

  mutable absl::Mutex mu_;
  FaultOptions options_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  FaultStats stats_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  // Held messages by release time; the second key keeps equal times apart.
  std::map<std::pair<absl::Time, uint64_t>, Held> held_ ABSL_GUARDED_BY(mu_);
  uint64_t next_hold_ ABSL_GUARDED_BY(mu_) = 0;
  // Recipient -> key in held_ of the message waiting to be overtaken.
  absl::flat_hash_map<int, std::pair<absl::Time, uint64_t>> reorder_slot_
      ABSL_GUARDED_BY(mu_);
  std::thread release_thread_;
};

}  // namespace petrel

#endif  // PETREL_VAN_TESTING_FAULT_VAN_H_

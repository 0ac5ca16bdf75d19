// The recovery protocol: how a job survives the death of a worker
// (docs/design.md, "Worker failures"). Every node of a training job runs a
// SimpleApp with app id kRecoveryApp, customer 0, registered before it
// joins. Requests and their answers (bodies are ProtoToBody of the protos
// in proto/recovery.proto):
//
//   head          from -> to          body              answer
//   kProgress     worker -> sched     WorkerProgress    RecoveryReply (**)
//   kDone         worker -> sched     WorkerProgress    RecoveryReply (*)
//   kDropWorker   sched -> server     worker rank       the server's last
//                                                        clock of it
//   kFailed       worker -> sched     reason            ""  (***)
//   kEval         worker -> sched     EvalReport        RecoveryReply
//
// Every RecoveryReply carries stop_training once worker 0 reported an
// EvalReport with stop_training (early stopping): a worker that sees it
// ends its training at its next batch boundary and sends kDone, which gets
// no more pieces.
//
// The scheduler merges the progress of kProgress and kDone into the job's
// progress line and CSV, and writes kEval's results into the CSV
// (scheduler/job_progress.h).
//
// (*) A worker sends kDone once it trained every piece it holds and left
// the bounded-delay clock. The scheduler answers when it has more pieces
// for it (reassigned from a dead worker), or, with finished = true, once
// every worker is done or dead.
// (**) Only pieces newly assigned to the worker (none: empty).
// (***) The worker's training failed (bad data, a deadline): the job ends
// as failed at once, instead of going on without it once its heartbeats
// stop.
//
// Thread safety: the functions are thread-safe (pure).
#ifndef PETREL_JOB_RECOVERY_PROTOCOL_H_
#define PETREL_JOB_RECOVERY_PROTOCOL_H_

#include <vector>

#include "absl/time/time.h"

#include "proto/recovery.pb.h"

namespace petrel {

// App ids 0 (key-value), 1 (trainer statistics) and 7 (checkpoints) are
// taken.
inline constexpr int kRecoveryApp = 8;

enum RecoveryHead : int {
  kProgress = 1,
  kDone = 2,
  kDropWorker = 3,
  kFailed = 4,
  kEval = 5,
};

// How often a training worker reports its progress (while it trains
// inside the bounded-delay clock; outside it, after every batch). The
// examples a worker trained since its last report are trained again when
// it dies.
inline constexpr absl::Duration kProgressInterval = absl::Milliseconds(100);

// Cuts what is left of `piece` into one piece per epoch (the first one
// starting at piece.examples_in_epoch), with ids from *next_id upward;
// none when it is done.
std::vector<pb::DataPiece> SplitByEpoch(const pb::DataPiece& piece,
                                        int64_t* next_id);

}  // namespace petrel

#endif  // PETREL_JOB_RECOVERY_PROTOCOL_H_

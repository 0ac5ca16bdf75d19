// The checkpoint protocol: the control app that the scheduler's checkpoint
// coordinator (scheduler/checkpoint_coordinator.h), the servers and the
// workers use to take a consistent checkpoint and to stop a job gracefully
// (docs/checkpoints.md, "Operations", describes the sequence).
//
// Every node runs a SimpleApp with app id kControlApp, customer 0,
// registered before the node joins. Requests and their answers:
//
//   head          from -> to          body                 answer
//   kPause        sched -> worker     ""                   the worker's
//                                                          position (*)
//   kResume       sched -> worker     ""                   ""
//   kStop         sched -> worker     reason               ""
//   kSave         sched -> server     checkpoint dir       EncodeSaveReply
//   kCheckpoint   node -> sched       reason               ""
//   kStopJob      node -> sched       reason               ""
//
// (*) A worker answers kPause at its next batch boundary once its pushes
// are acknowledged, then trains no further until kResume or kStop; a worker
// whose share is done answers at once with finished = true.
//
// Bodies travel in Meta.body, a proto3 string (UTF-8), so protos go base64.
//
// Thread safety: the functions are thread-safe (pure).
#ifndef PETREL_JOB_CHECKPOINT_PROTOCOL_H_
#define PETREL_JOB_CHECKPOINT_PROTOCOL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"

#include "proto/checkpoint.pb.h"

namespace petrel {

// App ids 0 (key-value) and 1 (trainer statistics) are taken.
inline constexpr int kControlApp = 7;

// How much longer than its usual deadline a worker waits while paused for
// a checkpoint, or for the end of the job when it has a checkpoint
// directory (the final checkpoint): the scheduler's default
// --checkpoint_timeout_s, the longest a checkpoint may take.
inline constexpr absl::Duration kCheckpointAllowance = absl::Minutes(10);

// How long a node that got SIGTERM/SIGINT waits for the scheduler to
// acknowledge its kStopJob before it stops alone. A live scheduler answers
// at once; a dead one never does, and a signal must stop the node well
// within the grace period petrel-launch gives it (docs/failures.md).
inline constexpr absl::Duration kStopAckTimeout = absl::Seconds(1);

enum ControlHead : int {
  kPause = 1,
  kResume = 2,
  kStop = 3,
  kSave = 4,
  kCheckpoint = 5,
  kStopJob = 6,
};

// A proto as a body (base64 of its binary form), and back: false when
// `body` is not one.
std::string ProtoToBody(const google::protobuf::Message& message);
bool ProtoFromBody(absl::string_view body, google::protobuf::Message* message);

std::string EncodeWorkerPosition(const pb::WorkerPosition& position);
// InvalidArgument when `body` is not one.
absl::StatusOr<pb::WorkerPosition> DecodeWorkerPosition(
    const std::string& body);

// A server's answer to kSave: the tables and files it wrote (in a
// CheckpointManifest with only `tables` and `files` set), or why it failed.
std::string EncodeSaveReply(
    const absl::StatusOr<pb::CheckpointManifest>& reply);
// The reply, the server's error (its code and message), or InvalidArgument
// for a malformed body.
absl::StatusOr<pb::CheckpointManifest> DecodeSaveReply(const std::string& body);

}  // namespace petrel

#endif  // PETREL_JOB_CHECKPOINT_PROTOCOL_H_

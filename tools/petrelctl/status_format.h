// How petrelctl prints the scheduler's admin replies: readable tables, or
// JSON (protobuf's JSON mapping of AdminReply) for scripts.
//
// Thread safety: stateless.
#ifndef PETREL_TOOLS_PETRELCTL_STATUS_FORMAT_H_
#define PETREL_TOOLS_PETRELCTL_STATUS_FORMAT_H_

#include <string>

#include "proto/meta.pb.h"

namespace petrel {

// One line on the job, then one row per node: role, rank, id, host:port,
// state, seconds since its last heartbeat, requests/s, rows per table.
std::string FormatStatus(const pb::AdminReply& reply);

// One row per table and server (rows, memory), then each table's total.
std::string FormatTables(const pb::AdminReply& reply);

// The reply as one JSON object (field names as in proto/meta.proto).
std::string FormatJson(const pb::AdminReply& reply);

}  // namespace petrel

#endif  // PETREL_TOOLS_PETRELCTL_STATUS_FORMAT_H_

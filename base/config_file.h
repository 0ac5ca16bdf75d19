// Loading configuration files written in protobuf text format (job configs,
// see proto/job.proto). Generic over the message type: nothing here knows
// what a job, table or model is.
//
//   pb::JobConfig job;
//   PETREL_RETURN_IF_ERROR(ParseTextProtoFile("job.textproto", &job));
//
// Thread safety: a free function with no shared state; callers may run it
// concurrently on different output messages.
#ifndef PETREL_BASE_CONFIG_FILE_H_
#define PETREL_BASE_CONFIG_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace petrel {

// Parses the text-format file `path` into `*out` (cleared first).
// Returns NotFound when the file does not exist, PermissionDenied or
// Unavailable when it cannot be read, and InvalidArgument naming
// "path:line:column" and the problem for a syntax error, an unknown field,
// an unknown enum value or a value out of its type's range. Only the first
// error is reported, as a compiler would. REQUIRES: out != nullptr.
absl::Status ParseTextProtoFile(const std::string& path,
                                google::protobuf::Message* out);

// As ParseTextProtoFile, for text already in memory; `name` stands for the
// file in error messages.
absl::Status ParseTextProto(const std::string& text, const std::string& name,
                            google::protobuf::Message* out);

}  // namespace petrel

#endif  // PETREL_BASE_CONFIG_FILE_H_

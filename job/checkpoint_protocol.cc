#include "job/checkpoint_protocol.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace petrel {

std::string ProtoToBody(const google::protobuf::Message& message) {
  return absl::Base64Escape(message.SerializeAsString());
}

bool ProtoFromBody(absl::string_view body, google::protobuf::Message* message) {
  std::string bytes;
  return absl::Base64Unescape(body, &bytes) && message->ParseFromString(bytes);
}

std::string EncodeWorkerPosition(const pb::WorkerPosition& position) {
  return ProtoToBody(position);
}

absl::StatusOr<pb::WorkerPosition> DecodeWorkerPosition(
    const std::string& body) {
  pb::WorkerPosition position;
  if (!ProtoFromBody(body, &position)) {
    return absl::InvalidArgumentError("malformed worker position");
  }
  return position;
}

// "OK <base64>" or "ERROR <code> <message>".
std::string EncodeSaveReply(
    const absl::StatusOr<pb::CheckpointManifest>& reply) {
  if (reply.ok()) return absl::StrCat("OK ", ProtoToBody(*reply));
  return absl::StrCat("ERROR ", static_cast<int>(reply.status().code()), " ",
                      reply.status().message());
}

absl::StatusOr<pb::CheckpointManifest> DecodeSaveReply(
    const std::string& body) {
  absl::string_view text = body;
  pb::CheckpointManifest manifest;
  if (absl::ConsumePrefix(&text, "OK ") && ProtoFromBody(text, &manifest)) {
    return manifest;
  }
  text = body;
  if (absl::ConsumePrefix(&text, "ERROR ")) {
    size_t space = text.find(' ');
    int code = 0;
    if (space != absl::string_view::npos &&
        absl::SimpleAtoi(text.substr(0, space), &code) && code > 0 &&
        code <= static_cast<int>(absl::StatusCode::kUnauthenticated)) {
      return absl::Status(static_cast<absl::StatusCode>(code),
                          text.substr(space + 1));
    }
  }
  return absl::InvalidArgumentError("malformed save reply");
}

}  // namespace petrel

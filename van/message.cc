#include "van/message.h"

#include "absl/strings/str_cat.h"

namespace petrel {

size_t DataTypeSize(pb::DataType type) {
  switch (type) {
    case pb::DATA_TYPE_BYTES:
      return 1;
    case pb::DATA_TYPE_INT32:
    case pb::DATA_TYPE_FLOAT:
      return 4;
    case pb::DATA_TYPE_UINT64:
    case pb::DATA_TYPE_INT64:
    case pb::DATA_TYPE_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

size_t Message::DataBytes() const {
  size_t total = 0;
  for (const Buffer& b : data) total += b.size();
  return total;
}

std::string Message::DebugString() const {
  std::string s =
      absl::StrCat("sender=", meta.sender(), " recipient=", meta.recipient());
  if (meta.has_control()) {
    absl::StrAppend(&s, " control=", pb::Command_Name(meta.control().cmd()));
  } else {
    absl::StrAppend(&s, " app=", meta.app_id(),
                    " customer=", meta.customer_id(), " ts=", meta.timestamp(),
                    meta.request() ? " request" : " response");
  }
  absl::StrAppend(&s, " frames=", data.size(), " bytes=", DataBytes());
  return s;
}

}  // namespace petrel

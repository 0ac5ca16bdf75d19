#include "base/config_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace petrel {
namespace {

// Keeps the first error the parser reports; protobuf counts lines and
// columns from 0, people from 1.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(const std::string& name) : name_(name) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    std::string text = message;
    // The tokenizer names the end of the input as an empty token.
    if (absl::EndsWith(text, "got: ")) text += "end of file";
    error_ = absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", text);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  const std::string& error() const { return error_; }

 private:
  const std::string& name_;
  std::string error_;
};

}  // namespace

absl::Status ParseTextProto(const std::string& text, const std::string& name,
                            google::protobuf::Message* out) {
  out->Clear();
  FirstErrorCollector errors(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(text, out)) return absl::OkStatus();
  if (errors.error().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": not a valid text-format ", out->GetDescriptor()->full_name()));
  }
  return absl::InvalidArgumentError(errors.error());
}

absl::Status ParseTextProtoFile(const std::string& path,
                                google::protobuf::Message* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, " is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    std::string why = absl::StrCat("cannot open config file ", path, ": ",
                                   std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(why);
    if (error == EACCES) return absl::PermissionDeniedError(why);
    return absl::UnavailableError(why);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::UnavailableError(
        absl::StrCat("cannot read config file ", path));
  }
  return ParseTextProto(text.str(), path, out);
}

}  // namespace petrel

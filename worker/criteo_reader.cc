#include "worker/criteo_reader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

#include "worker/feature_hash.h"
#include "worker/internal/parse_util.h"
#include "worker/sharded_line_reader.h"
#include "worker/text_reader.h"

namespace petrel {
namespace {

using internal::IntParse;
using internal::Quote;

// Splits `line` at tabs into *fields. Returns the number of fields, which
// may exceed kCriteoColumns (only the first kCriteoColumns are stored).
size_t SplitTabs(absl::string_view line,
                 std::array<absl::string_view, kCriteoColumns>* fields) {
  size_t count = 0;
  const char* p = line.data();
  const char* end = p + line.size();
  // Fields are short, so a byte loop beats a memchr call per field.
  while (true) {
    const char* field_end = p;
    while (field_end < end && *field_end != '\t') ++field_end;
    if (count < fields->size()) {
      (*fields)[count] = {p, static_cast<size_t>(field_end - p)};
    }
    ++count;
    if (field_end == end) return count;
    p = field_end + 1;
  }
}

// Parses integer field `field` (0..12) into *value and appends its feature.
absl::Status AddIntegerFeature(int field, absl::string_view text,
                               int64_t* value, Batch* batch) {
  switch (internal::ParseInt64(text, value)) {
    case IntParse::kOk:
      break;
    case IntParse::kOverflow:
      return absl::InvalidArgumentError(
          absl::StrCat("integer field I", field + 1, " ", Quote(text),
                       " overflows 64 bits"));
    case IntParse::kInvalid:
      return absl::InvalidArgumentError(
          absl::StrCat("integer field I", field + 1, " ", Quote(text),
                       " is not an integer"));
  }
  batch->keys.push_back(CriteoIntegerKey(field, *value));
  batch->values.push_back(1.0f);
  return absl::OkStatus();
}

// The numeric feature of an integer value (see worker/reader.h).
float NumericFeature(int64_t value) {
  return static_cast<float>(
      std::log1p(static_cast<double>(std::max<int64_t>(value, 0))));
}

}  // namespace

absl::StatusOr<bool> ParseCriteoLine(absl::string_view line,
                                     const ReaderOptions& options,
                                     Batch* batch) {
  if (line.empty()) return false;
  std::array<absl::string_view, kCriteoColumns> fields;
  const size_t count = SplitTabs(line, &fields);
  if (count != kCriteoColumns) {
    return absl::InvalidArgumentError(
        absl::StrCat("line has ", count, " tab-separated fields, expected ",
                     kCriteoColumns));
  }
  if (fields[0].empty()) return absl::InvalidArgumentError("label is empty");
  float label;
  absl::Status status = internal::ParseLabel(fields[0], &label);
  if (!status.ok()) return status;
  float* numeric = nullptr;
  if (options.with_numeric) {
    batch->num_numeric = kCriteoIntegerFields;
    batch->numeric.resize(batch->numeric.size() + kCriteoIntegerFields, 0.0f);
    numeric =
        batch->numeric.data() + batch->numeric.size() - kCriteoIntegerFields;
  }
  for (int i = 0; i < kCriteoIntegerFields; ++i) {
    if (fields[1 + i].empty()) continue;
    int64_t value;
    status = AddIntegerFeature(i, fields[1 + i], &value, batch);
    if (!status.ok()) return status;
    if (options.with_fields) batch->fields.push_back(i);
    if (numeric != nullptr) numeric[i] = NumericFeature(value);
  }
  for (int j = 0; j < kCriteoCategoricalFields; ++j) {
    const absl::string_view text = fields[1 + kCriteoIntegerFields + j];
    if (text.empty()) continue;
    batch->keys.push_back(HashFeature(kCriteoIntegerFields + j, text));
    batch->values.push_back(1.0f);
    if (options.with_fields) batch->fields.push_back(kCriteoIntegerFields + j);
  }
  batch->labels.push_back(label);
  batch->offsets.push_back(static_cast<uint32_t>(batch->keys.size()));
  return true;
}

absl::StatusOr<bool> ParseCriteoLine(absl::string_view line, Batch* batch) {
  return ParseCriteoLine(line, ReaderOptions(), batch);
}

absl::StatusOr<std::unique_ptr<Reader>> OpenCriteoReader(
    const ReaderOptions& options) {
  return TextReader::Open(options, &ParseCriteoLine);
}

}  // namespace petrel

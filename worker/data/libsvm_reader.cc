#include "worker/data/libsvm_reader.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

#include "worker/data/internal/parse_util.h"
#include "worker/data/sharded_line_reader.h"
#include "worker/data/text_reader.h"

namespace petrel {
namespace {

using internal::IntParse;
using internal::Quote;

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// Returns the next space-separated token of *rest, or an empty view.
absl::string_view NextToken(absl::string_view* rest) {
  size_t i = 0;
  while (i < rest->size() && IsSpace((*rest)[i])) ++i;
  size_t j = i;
  while (j < rest->size() && !IsSpace((*rest)[j])) ++j;
  absl::string_view token = rest->substr(i, j - i);
  rest->remove_prefix(j);
  return token;
}

// Applies options.max_abs_value to *value: false when it is above it and
// not clipped.
bool WithinLimit(const ReaderOptions& options, float* value) {
  const float limit = options.max_abs_value;
  if (std::fabs(*value) <= limit) return true;
  if (!options.clip_out_of_range) return false;
  *value = std::copysign(limit, *value);
  return true;
}

absl::Status ParseFeature(absl::string_view token, const ReaderOptions& options,
                          Batch* batch) {
  const size_t colon = token.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature ", Quote(token), " is not index:value"));
  }
  const absl::string_view index_text = token.substr(0, colon);
  const absl::string_view value_text = token.substr(colon + 1);
  if (index_text == "qid") return absl::OkStatus();
  uint64_t index;
  switch (internal::ParseUint64(index_text, &index)) {
    case IntParse::kOk:
      break;
    case IntParse::kOverflow:
      return absl::InvalidArgumentError(
          absl::StrCat("index ", Quote(index_text), " overflows 64 bits"));
    case IntParse::kInvalid:
      return absl::InvalidArgumentError(absl::StrCat(
          "index ", Quote(index_text), " is not a non-negative integer"));
  }
  float value;
  if (!internal::ParseFloat(value_text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("value ", Quote(value_text),
                                                   " of index ", index,
                                                   " is not a finite float"));
  }
  if (!WithinLimit(options, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value ", value, " of index ", index, " is above data.max_abs_value ",
        options.max_abs_value,
        " in magnitude (data.out_of_range: OUT_OF_RANGE_CLIP clips it)"));
  }
  batch->keys.push_back(index);
  batch->values.push_back(value);
  return absl::OkStatus();
}

}  // namespace

namespace {

// The common case, `digits:value` followed by a space or the end: parses it,
// appends the feature, advances *p and returns true. Returns false (with *p
// unchanged) for anything else, which ParseFeature then handles.
bool ParseFeatureFast(const char** p, const char* end,
                      const ReaderOptions& options, Batch* batch) {
  const char* q = *p;
  uint64_t index = 0;
  const char* digits = q;
  for (; q < end && static_cast<unsigned>(*q - '0') <= 9; ++q) {
    index = index * 10 + static_cast<unsigned>(*q - '0');
  }
  // Up to 19 digits cannot overflow; longer indices take the checked path.
  if (q == digits || q - digits > 19 || q == end || *q != ':') return false;
  const char* value_begin = ++q;
  while (q < end && !IsSpace(*q)) ++q;
  float value;
  if (q - value_begin == 1 && static_cast<unsigned>(*value_begin - '0') <= 9) {
    value = static_cast<float>(*value_begin - '0');  // `1`, as click data has
  } else if (!internal::ParseFloat(
                 absl::string_view(value_begin, q - value_begin), &value)) {
    return false;
  }
  if (!WithinLimit(options, &value)) return false;
  batch->keys.push_back(index);
  batch->values.push_back(value);
  *p = q;
  return true;
}

}  // namespace

absl::StatusOr<bool> ParseLibsvmLine(absl::string_view line,
                                     const ReaderOptions& options,
                                     Batch* batch) {
  const void* hash = std::memchr(line.data(), '#', line.size());
  if (hash != nullptr)
    line = line.substr(0, static_cast<const char*>(hash) - line.data());
  absl::string_view label_text = NextToken(&line);
  if (label_text.empty()) return false;
  float label;
  absl::Status status = internal::ParseLabel(label_text, &label);
  if (!status.ok()) return status;
  const char* p = line.data();
  const char* end = p + line.size();
  while (true) {
    while (p < end && IsSpace(*p)) ++p;
    if (p == end) break;
    if (ParseFeatureFast(&p, end, options, batch)) continue;
    const char* token_begin = p;
    while (p < end && !IsSpace(*p)) ++p;
    status = ParseFeature(absl::string_view(token_begin, p - token_begin),
                          options, batch);
    if (!status.ok()) return status;
  }
  if (options.with_fields) batch->fields.resize(batch->keys.size(), 0);
  batch->labels.push_back(label);
  batch->offsets.push_back(static_cast<uint32_t>(batch->keys.size()));
  return true;
}

absl::StatusOr<bool> ParseLibsvmLine(absl::string_view line, Batch* batch) {
  return ParseLibsvmLine(line, ReaderOptions(), batch);
}

absl::StatusOr<std::unique_ptr<Reader>> OpenLibsvmReader(
    const ReaderOptions& options) {
  return TextReader::Open(options, &ParseLibsvmLine);
}

}  // namespace petrel

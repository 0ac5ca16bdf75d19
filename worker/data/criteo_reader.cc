#include "worker/data/criteo_reader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "absl/strings/str_cat.h"

#include "worker/data/feature_hash.h"
#include "worker/data/internal/parse_util.h"
#include "worker/data/sharded_line_reader.h"
#include "worker/data/text_reader.h"

namespace petrel {
namespace {

using internal::IntParse;
using internal::Quote;

// Splits `line` at tabs into *fields. Returns the number of fields, which
// may exceed kCriteoColumns (only the first kCriteoColumns are stored).
size_t SplitTabs(absl::string_view line,
                 std::array<absl::string_view, kCriteoColumns>* fields) {
  size_t count = 0;
  const char* begin = line.data();  // of the current field
  const char* p = begin;
  const char* const end = p + line.size();
  auto cut = [&](const char* tab) {
    if (count < fields->size()) {
      (*fields)[count] = {begin, static_cast<size_t>(tab - begin)};
    }
    ++count;
    begin = tab + 1;
  };
#ifdef __SSE2__
  // 16 bytes at a time: a bit per tab, then one step per tab.
  const __m128i tabs = _mm_set1_epi8('\t');
  for (; end - p >= 16; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    unsigned mask =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, tabs)));
    for (; mask != 0; mask &= mask - 1) cut(p + __builtin_ctz(mask));
  }
#endif
  for (; p < end; ++p) {
    if (*p == '\t') cut(p);
  }
  cut(end);
  return count;
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

// The numeric feature of an integer value (see worker/data/reader.h).
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

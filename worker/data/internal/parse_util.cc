#include "worker/data/internal/parse_util.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace petrel {
namespace internal {
namespace {

absl::string_view StripPlus(absl::string_view text) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text[0] == '-') return absl::string_view();
  }
  return text;
}

template <typename T>
IntParse ParseInteger(absl::string_view text, T* value) {
  if (text.empty()) return IntParse::kInvalid;
  const char* end = text.data() + text.size();
  // Fast path: up to 18 digits cannot overflow either type.
  const char* p = text.data();
  const bool negative = std::is_signed<T>::value && *p == '-';
  if (negative) ++p;
  if (p < end && end - p <= 18) {
    uint64_t magnitude = 0;
    const char* q = p;
    for (; q < end && static_cast<unsigned>(*q - '0') <= 9; ++q) {
      magnitude = magnitude * 10 + static_cast<unsigned>(*q - '0');
    }
    if (q == end) {
      *value =
          negative ? static_cast<T>(0 - magnitude) : static_cast<T>(magnitude);
      return IntParse::kOk;
    }
  }
  auto result = std::from_chars(text.data(), end, *value);
  if (result.ec == std::errc::result_out_of_range) return IntParse::kOverflow;
  if (result.ec != std::errc() || result.ptr != end) return IntParse::kInvalid;
  return IntParse::kOk;
}

}  // namespace

namespace {

// Parses [-+]digits[.digits] with at most 15 digits exactly: the mantissa
// and the power of ten are exact doubles, so the quotient is correctly
// rounded. Returns false for anything else.
bool ParseSimpleDecimal(absl::string_view text, double* value) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3, 1e4,  1e5,
                                      1e6,  1e7,  1e8,  1e9, 1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15};
  const char* p = text.data();
  const char* end = p + text.size();
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  uint64_t mantissa = 0;
  int digits = 0, fraction = 0;
  for (; p < end && *p >= '0' && *p <= '9'; ++p, ++digits) {
    mantissa = mantissa * 10 + (*p - '0');
  }
  if (p < end && *p == '.') {
    for (++p; p < end && *p >= '0' && *p <= '9'; ++p, ++digits, ++fraction) {
      mantissa = mantissa * 10 + (*p - '0');
    }
  }
  if (p != end || digits == 0 || digits > 15) return false;
  const double magnitude = static_cast<double>(mantissa) / kPow10[fraction];
  *value = negative ? -magnitude : magnitude;
  return true;
}

}  // namespace

bool ParseFloat(absl::string_view text, float* value) {
  double d;
  if (ParseSimpleDecimal(text, &d)) {
    *value = static_cast<float>(d);
    return true;
  }
  text = StripPlus(text);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto result = std::from_chars(text.data(), end, d);
  if (result.ec != std::errc() || result.ptr != end) return false;
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
    return false;
  }
  *value = static_cast<float>(d);
  return true;
}

IntParse ParseUint64(absl::string_view text, uint64_t* value) {
  return ParseInteger(text, value);
}

IntParse ParseInt64(absl::string_view text, int64_t* value) {
  return ParseInteger(StripPlus(text), value);
}

absl::Status ParseLabel(absl::string_view text, float* label) {
  float value;
  if (!ParseFloat(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", Quote(text), " is not a number"));
  }
  if (value != 0 && value != 1 && value != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", Quote(text), " is not 0, 1 or -1"));
  }
  *label = value == 1 ? 1.0f : 0.0f;
  return absl::OkStatus();
}

std::string Quote(absl::string_view text) {
  constexpr size_t kMax = 40;
  const bool cut = text.size() > kMax;
  if (cut) text = text.substr(0, kMax);
  return absl::StrCat("'", absl::CHexEscape(text), cut ? "...'" : "'");
}

}  // namespace internal
}  // namespace petrel

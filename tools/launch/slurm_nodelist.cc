#include "tools/launch/slurm_nodelist.h"

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace petrel {
namespace {

constexpr size_t kMaxHosts = 1000000;

absl::Status Bad(absl::string_view list, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad Slurm node list '", list, "': ", why));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The numbers a bracket body ("01-03,7") stands for, as zero-padded text.
absl::StatusOr<std::vector<std::string>> ExpandRanges(absl::string_view body,
                                                      absl::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(body, ',')) {
    const size_t dash = part.find('-');
    absl::string_view lo = part.substr(0, dash);
    absl::string_view hi =
        dash == absl::string_view::npos ? lo : part.substr(dash + 1);
    uint64_t first = 0;
    uint64_t last = 0;
    if (!AllDigits(lo) || !AllDigits(hi) || lo.size() > 9 || hi.size() > 9 ||
        !absl::SimpleAtoi(lo, &first) || !absl::SimpleAtoi(hi, &last)) {
      return Bad(list, absl::StrCat("'", part, "' is not N or LO-HI"));
    }
    if (first > last) {
      return Bad(list, absl::StrCat("range '", part, "' goes down"));
    }
    if (last - first >= kMaxHosts || out.size() + (last - first) >= kMaxHosts) {
      return Bad(list, "more than 1000000 hosts");
    }
    for (uint64_t n = first; n <= last; ++n) {
      std::string digits = absl::StrCat(n);
      if (digits.size() < lo.size()) {
        digits.insert(0, lo.size() - digits.size(), '0');
      }
      out.push_back(std::move(digits));
    }
  }
  return out;
}

// Appends the hosts of one item ("rack[1-2]n[01-02]") to `hosts`.
absl::Status ExpandItem(absl::string_view item, absl::string_view list,
                        std::vector<std::string>& hosts) {
  std::vector<std::string> names = {""};
  size_t pos = 0;
  while (pos < item.size()) {
    const size_t open = item.find('[', pos);
    const absl::string_view text = item.substr(pos, open - pos);
    if (text.find(']') != absl::string_view::npos) {
      return Bad(list, "']' without '['");
    }
    for (std::string& name : names) absl::StrAppend(&name, text);
    if (open == absl::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == absl::string_view::npos) return Bad(list, "'[' without ']'");
    absl::StatusOr<std::vector<std::string>> numbers =
        ExpandRanges(item.substr(open + 1, close - open - 1), list);
    if (!numbers.ok()) return numbers.status();
    if (names.size() * numbers->size() + hosts.size() > kMaxHosts) {
      return Bad(list, "more than 1000000 hosts");
    }
    std::vector<std::string> next;
    next.reserve(names.size() * numbers->size());
    for (const std::string& name : names) {
      for (const std::string& number : *numbers) {
        next.push_back(absl::StrCat(name, number));
      }
    }
    names = std::move(next);
    pos = close + 1;
  }
  if (names.size() == 1 && names[0].empty()) return Bad(list, "empty name");
  hosts.insert(hosts.end(), names.begin(), names.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmNodeList(
    absl::string_view list) {
  std::vector<std::string> hosts;
  if (absl::StripAsciiWhitespace(list).empty()) return Bad(list, "empty");
  // Split at the commas outside brackets.
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size()) {
      if (list[i] == '[') ++depth;
      if (list[i] == ']') --depth;
      if (depth < 0 || depth > 1) return Bad(list, "unbalanced brackets");
      if (list[i] != ',' || depth > 0) continue;
    }
    if (absl::Status s = ExpandItem(list.substr(start, i - start), list, hosts);
        !s.ok()) {
      return s;
    }
    start = i + 1;
  }
  if (depth != 0) return Bad(list, "'[' without ']'");
  return hosts;
}

}  // namespace petrel

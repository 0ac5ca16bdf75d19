#include "kv/replication/forwarding.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"

namespace petrel {

bool ReplicaDedup::SeenOrRecord(int sender, int customer, int origin,
                                uint64_t seq, bool in_order,
                                const Ranges* ranges, Ranges* fresh) {
  if (fresh != nullptr) fresh->clear();
  Stream& s = streams_[std::make_tuple(sender, customer, origin)];
  if (seq <= s.watermark) return true;
  if (in_order) {
    if (s.above.contains(seq)) return true;
    s.watermark = seq;
    // Entries below the watermark are covered by it now.
    absl::erase_if(s.above, [seq](const auto& e) { return e.first <= seq; });
    return false;
  }
  auto [it, inserted] = s.above.try_emplace(seq);
  Seen& seen = it->second;
  if (ranges == nullptr) {  // whole
    if (!inserted) return true;
    seen.whole = true;
    return false;
  }
  if (inserted) {
    seen.ranges = *ranges;
    if (fresh != nullptr) *fresh = *ranges;
    return false;
  }
  if (seen.whole) return true;
  Ranges unseen;
  std::set_difference(ranges->begin(), ranges->end(), seen.ranges.begin(),
                      seen.ranges.end(), std::back_inserter(unseen));
  if (unseen.empty()) return true;
  Ranges merged;
  std::set_union(seen.ranges.begin(), seen.ranges.end(), unseen.begin(),
                 unseen.end(), std::back_inserter(merged));
  seen.ranges = std::move(merged);
  if (fresh != nullptr) *fresh = std::move(unseen);
  return false;
}

namespace {

// An entry's range count in Export's layout when it is whole.
constexpr uint64_t kWhole = ~uint64_t{0};

}  // namespace

// Export's layout: little-endian uint64 words; per stream sender,
// customer, origin, watermark, count of numbers above, then per number
// above: the number, its count of ranges (kWhole: every range), the ranges.
std::string ReplicaDedup::Export() const {
  std::vector<uint64_t> words;
  for (const auto& [key, s] : streams_) {
    words.push_back(static_cast<uint32_t>(std::get<0>(key)));
    words.push_back(static_cast<uint32_t>(std::get<1>(key)));
    words.push_back(static_cast<uint32_t>(std::get<2>(key)));
    words.push_back(s.watermark);
    words.push_back(s.above.size());
    for (const auto& [seq, seen] : s.above) {
      words.push_back(seq);
      words.push_back(seen.whole ? kWhole : seen.ranges.size());
      if (!seen.whole) {
        words.insert(words.end(), seen.ranges.begin(), seen.ranges.end());
      }
    }
  }
  return std::string(reinterpret_cast<const char*>(words.data()),
                     words.size() * sizeof(uint64_t));
}

absl::Status ReplicaDedup::Import(absl::string_view bytes) {
  return Import(bytes, nullptr);
}

absl::Status ReplicaDedup::Import(absl::string_view bytes,
                                  const std::function<bool(int origin)>& keep) {
  if (bytes.size() % sizeof(uint64_t) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replica dedup state of ", bytes.size(), " bytes, not whole words"));
  }
  std::vector<uint64_t> words(bytes.size() / sizeof(uint64_t));
  if (!words.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  auto truncated = [](size_t i) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica dedup state truncated at word ", i));
  };
  // Checked whole before anything is merged: every count fits in what
  // follows, every range index is a 32-bit one, ascending.
  for (size_t i = 0; i < words.size();) {
    if (words.size() - i < 5) return truncated(i);
    const uint64_t n = words[i + 4];
    i += 5;
    for (uint64_t k = 0; k < n; ++k) {
      if (words.size() - i < 2) return truncated(i);
      const uint64_t m = words[i + 1];
      i += 2;
      if (m == kWhole) continue;
      if (m > words.size() - i) return truncated(i);
      for (uint64_t r = 0; r < m; ++r) {
        if (words[i + r] > UINT32_MAX ||
            (r > 0 && words[i + r] <= words[i + r - 1])) {
          return absl::InvalidArgumentError(absl::StrCat(
              "replica dedup state: bad range list at word ", i + r));
        }
      }
      i += m;
    }
  }
  for (size_t i = 0; i < words.size();) {
    const bool take = !keep || keep(static_cast<int>(words[i + 2]));
    Stream* s = nullptr;
    if (take) {
      s = &streams_[std::make_tuple(static_cast<int>(words[i]),
                                    static_cast<int>(words[i + 1]),
                                    static_cast<int>(words[i + 2]))];
      s->watermark = std::max(s->watermark, words[i + 3]);
    }
    const uint64_t n = words[i + 4];
    i += 5;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t seq = words[i];
      const uint64_t m = words[i + 1];
      i += 2;
      const size_t count = m == kWhole ? 0 : static_cast<size_t>(m);
      if (take) {
        Seen& seen = s->above[seq];
        if (m == kWhole) {
          seen.whole = true;
          seen.ranges.clear();
        } else if (!seen.whole) {
          Ranges add(words.begin() + i, words.begin() + i + count);
          Ranges merged;
          std::set_union(seen.ranges.begin(), seen.ranges.end(), add.begin(),
                         add.end(), std::back_inserter(merged));
          seen.ranges = std::move(merged);
        }
      }
      i += count;
    }
    if (take) {
      const uint64_t w = s->watermark;
      absl::erase_if(s->above, [w](const auto& e) { return e.first <= w; });
    }
  }
  return absl::OkStatus();
}

Message ForwardCopy(const Message& request, int self, uint64_t map_version) {
  Message fwd;
  fwd.meta = request.meta;
  fwd.data = request.data;
  fwd.meta.set_pull(false);
  fwd.meta.set_forwarded(true);
  fwd.meta.set_map_version(map_version);
  fwd.meta.set_origin_sender(request.meta.sender());
  fwd.meta.set_origin_customer(request.meta.customer_id());
  if (request.meta.origin_node() == 0) {
    fwd.meta.set_origin_node(self);
    fwd.meta.set_origin_seq(request.meta.seq());
    fwd.meta.set_origin_in_order(true);
  } else {
    fwd.meta.set_origin_in_order(false);
  }
  fwd.meta.clear_status_code();
  fwd.meta.clear_status_message();
  fwd.meta.clear_range_copy();
  fwd.meta.clear_replica_dedup();
  return fwd;
}

std::function<bool(int origin)> CopiedStreams(int source,
                                              const ReplicaMap& map) {
  return [source, map](int origin) {
    return origin == source || !IsServerId(origin) ||
           map.dead((origin - ServerRankToId(0)) / 2);
  };
}

}  // namespace petrel

namespace petrel {

ReplicaDedup::Ranges RangesOfKeys(const KeyRangeMap& ranges,
                                  const SArray<uint64_t>& keys) {
  ReplicaDedup::Ranges out;
  out.reserve(keys.size());
  for (uint64_t key : keys) {
    out.push_back(static_cast<uint32_t>(ranges.RangeOf(key)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace petrel

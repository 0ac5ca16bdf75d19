#include "kv/kv_replication.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace petrel {

bool ReplicaDedup::SeenOrRecord(int sender, int customer, int origin,
                                uint64_t seq, bool in_order) {
  Stream& s = streams_[std::make_tuple(sender, customer, origin)];
  if (seq <= s.watermark || s.above.contains(seq)) return true;
  if (in_order) {
    s.watermark = seq;
    // Entries below the watermark are covered by it now.
    absl::erase_if(s.above, [seq](uint64_t v) { return v <= seq; });
  } else {
    s.above.insert(seq);
  }
  return false;
}

// Export's layout: little-endian uint64 words; per stream sender,
// customer, origin, watermark, count of numbers above, the numbers.
std::string ReplicaDedup::Export() const {
  std::vector<uint64_t> words;
  for (const auto& [key, s] : streams_) {
    words.push_back(static_cast<uint32_t>(std::get<0>(key)));
    words.push_back(static_cast<uint32_t>(std::get<1>(key)));
    words.push_back(static_cast<uint32_t>(std::get<2>(key)));
    words.push_back(s.watermark);
    words.push_back(s.above.size());
    words.insert(words.end(), s.above.begin(), s.above.end());
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
  // Checked whole before anything is merged.
  for (size_t i = 0; i < words.size();) {
    if (words.size() - i < 5 || words[i + 4] > words.size() - i - 5) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica dedup state truncated at word ", i));
    }
    i += 5 + words[i + 4];
  }
  for (size_t i = 0; i < words.size();) {
    if (keep && !keep(static_cast<int>(words[i + 2]))) {
      i += 5 + words[i + 4];
      continue;
    }
    Stream& s = streams_[std::make_tuple(static_cast<int>(words[i]),
                                         static_cast<int>(words[i + 1]),
                                         static_cast<int>(words[i + 2]))];
    s.watermark = std::max(s.watermark, words[i + 3]);
    const size_t n = words[i + 4];
    for (size_t k = 0; k < n; ++k) s.above.insert(words[i + 5 + k]);
    const uint64_t w = s.watermark;
    absl::erase_if(s.above, [w](uint64_t v) { return v <= w; });
    i += 5 + n;
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

#include "kv/kv_slicer.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

absl::Status CheckRequest(const SArray<Key>& keys, const Buffer& vals,
                          size_t elem_size, const SArray<int>& lens) {
  size_t num_vals = vals.size() / elem_size;
  if (vals.size() % elem_size != 0) {
    return absl::InvalidArgumentError(
        "value buffer size is not whole elements");
  }
  if (!lens.empty()) {
    if (lens.size() != keys.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(lens.size(), " lens for ", keys.size(), " keys"));
    }
    int64_t sum = 0;
    for (int len : lens) {
      if (len < 0) return absl::InvalidArgumentError("negative length");
      sum += len;
    }
    if (static_cast<size_t>(sum) != num_vals) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lens sum to ", sum, " but ", num_vals, " values were given"));
    }
  } else if (num_vals > 0 && (keys.empty() || num_vals % keys.size() != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        num_vals, " values do not divide evenly over ", keys.size(), " keys"));
  }
  return absl::OkStatus();
}

// Copies the values of the keys at `positions` into one buffer.
Buffer GatherValues(const char* src, const std::vector<uint32_t>& positions,
                    const std::vector<size_t>& offsets, size_t width_bytes,
                    const SArray<int>& lens, size_t elem_size) {
  size_t total = 0;
  for (uint32_t p : positions) {
    total += lens.empty() ? width_bytes : lens[p] * elem_size;
  }
  Buffer out = Buffer::Allocate(total);
  char* dst = out.mutable_data();
  for (uint32_t p : positions) {
    size_t n = lens.empty() ? width_bytes : lens[p] * elem_size;
    size_t off = lens.empty() ? p * width_bytes : offsets[p];
    std::memcpy(dst, src + off, n);
    dst += n;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<KVSlice>> SliceRequest(const KeyRangeMap& ranges,
                                                  const SArray<Key>& keys,
                                                  const Buffer& vals,
                                                  size_t elem_size,
                                                  const SArray<int>& lens) {
  absl::Status s = CheckRequest(keys, vals, elem_size, lens);
  if (!s.ok()) return s;
  const int num_servers = ranges.num_servers();
  std::vector<int> owner(keys.size());
  std::vector<uint32_t> counts(num_servers, 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    owner[i] = ranges.OwnerOf(keys[i]);
    ++counts[owner[i]];
  }
  std::vector<KVSlice> slices;
  for (int r = 0; r < num_servers; ++r) {
    if (counts[r] == keys.size() && !keys.empty()) {  // one server: no copy
      slices.push_back(KVSlice{r, keys, vals, lens, {}});
      return slices;
    }
  }
  std::vector<std::vector<uint32_t>> positions(num_servers);
  for (int r = 0; r < num_servers; ++r) positions[r].reserve(counts[r]);
  for (size_t i = 0; i < keys.size(); ++i) {
    positions[owner[i]].push_back(static_cast<uint32_t>(i));
  }
  std::vector<size_t> offsets;
  if (!lens.empty()) {
    offsets.resize(keys.size());
    size_t off = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      offsets[i] = off;
      off += lens[i] * elem_size;
    }
  }
  size_t width_bytes = keys.empty() ? 0 : vals.size() / keys.size();
  for (int r = 0; r < num_servers; ++r) {
    if (positions[r].empty()) continue;
    KVSlice slice;
    slice.server_rank = r;
    slice.keys = SArray<Key>(positions[r].size());
    for (size_t j = 0; j < positions[r].size(); ++j) {
      slice.keys[j] = keys[positions[r][j]];
    }
    if (!lens.empty()) {
      slice.lens = SArray<int>(positions[r].size());
      for (size_t j = 0; j < positions[r].size(); ++j) {
        slice.lens[j] = lens[positions[r][j]];
      }
    }
    if (!vals.empty()) {
      slice.vals = GatherValues(vals.data(), positions[r], offsets, width_bytes,
                                lens, elem_size);
    }
    slice.positions = std::move(positions[r]);
    slices.push_back(std::move(slice));
  }
  return slices;
}

namespace {

// Parts of at most `max_bytes` (whole elements, at least one) of the values
// of key `key` (lens entry `len` when the request had lens), which start
// at byte `offset` of `vals`.
void SplitKey(int server_rank, const SArray<Key>& keys, size_t key,
              const Buffer& vals, size_t offset, size_t bytes, bool with_lens,
              size_t elem_size, size_t max_bytes, std::vector<KVSlice>* out) {
  const size_t total = bytes / elem_size;
  const size_t per_part = std::max<size_t>(1, max_bytes / elem_size);
  for (size_t first = 0; first < total; first += per_part) {
    const size_t n = std::min(per_part, total - first);
    KVSlice part;
    part.server_rank = server_rank;
    part.keys = keys.Segment(key, key + 1);
    part.vals = vals.Slice(offset + first * elem_size, n * elem_size);
    if (with_lens) part.lens = SArray<int>{static_cast<int>(n)};
    part.value_offset = static_cast<int64_t>(first);
    part.value_total = static_cast<int64_t>(total);
    out->push_back(std::move(part));
  }
}

}  // namespace

std::vector<KVSlice> SplitPushSlices(std::vector<KVSlice> slices,
                                     size_t elem_size, size_t max_bytes,
                                     bool split_keys) {
  if (max_bytes == 0) return slices;
  std::vector<KVSlice> out;
  out.reserve(slices.size());
  for (KVSlice& slice : slices) {
    const size_t n = slice.keys.size();
    if (slice.vals.size() <= max_bytes || (n < 2 && !split_keys) || n == 0) {
      out.push_back(std::move(slice));
      continue;
    }
    const size_t width = slice.lens.empty() ? slice.vals.size() / n : 0;
    auto bytes_of = [&](size_t i) {
      return slice.lens.empty() ? width : slice.lens[i] * elem_size;
    };
    size_t begin = 0;
    size_t offset = 0;  // bytes of values before key `begin`
    while (begin < n) {
      size_t end = begin + 1;
      size_t bytes = bytes_of(begin);
      while (end < n && bytes + bytes_of(end) <= max_bytes) {
        bytes += bytes_of(end++);
      }
      if (split_keys && end == begin + 1 && bytes > max_bytes) {
        SplitKey(slice.server_rank, slice.keys, begin, slice.vals, offset,
                 bytes, !slice.lens.empty(), elem_size, max_bytes, &out);
        begin = end;
        offset += bytes;
        continue;
      }
      KVSlice part;
      part.server_rank = slice.server_rank;
      part.keys = slice.keys.Segment(begin, end);
      part.vals = slice.vals.Slice(offset, bytes);
      if (!slice.lens.empty()) part.lens = slice.lens.Segment(begin, end);
      out.push_back(std::move(part));
      begin = end;
      offset += bytes;
    }
  }
  return out;
}

absl::Status MergePulled(const std::vector<KVSlice>& slices,
                         const std::vector<PulledPart>& parts, size_t num_keys,
                         size_t elem_size, Buffer* vals, SArray<int>* lens) {
  // Per-key counts in the caller's order.
  std::vector<int> count(num_keys, 0);
  for (size_t i = 0; i < slices.size(); ++i) {
    const KVSlice& slice = slices[i];
    const PulledPart& part = parts[i];
    size_t n = slice.keys.size();
    size_t part_vals = part.vals.size() / elem_size;
    if (part.keys.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("server ", slice.server_rank, " answered ",
                       part.keys.size(), " keys for ", n, " asked"));
    }
    if (part.lens.empty() && n > 0 && part_vals % n != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("server ", slice.server_rank, " sent ", part_vals,
                       " values for ", n, " keys"));
    }
    for (size_t j = 0; j < n; ++j) {
      size_t pos = slice.positions.empty() ? j : slice.positions[j];
      count[pos] =
          part.lens.empty() ? static_cast<int>(part_vals / n) : part.lens[j];
    }
  }
  bool uniform = std::all_of(count.begin(), count.end(),
                             [&](int c) { return c == count.front(); });
  if (lens == nullptr && !uniform) {
    return absl::InvalidArgumentError(
        "keys have values of different lengths; pass lens to Pull");
  }
  if (lens != nullptr) *lens = SArray<int>(std::vector<int>(count));
  std::vector<size_t> offsets(num_keys + 1, 0);
  for (size_t i = 0; i < num_keys; ++i) {
    offsets[i + 1] = offsets[i] + count[i] * elem_size;
  }
  size_t total = offsets[num_keys];
  if (slices.size() == 1 && slices[0].positions.empty() &&
      vals->size() != total) {
    *vals = parts[0].vals;  // the whole answer, in order: no copy
    return absl::OkStatus();
  }
  if (vals->size() != total) *vals = Buffer::Allocate(total);
  for (size_t i = 0; i < slices.size(); ++i) {
    const char* src = parts[i].vals.data();
    for (size_t j = 0; j < slices[i].keys.size(); ++j) {
      size_t pos = slices[i].positions.empty() ? j : slices[i].positions[j];
      size_t n = offsets[pos + 1] - offsets[pos];
      std::memcpy(vals->mutable_data() + offsets[pos], src, n);
      src += n;
    }
  }
  return absl::OkStatus();
}

}  // namespace petrel

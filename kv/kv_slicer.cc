#include "kv/kv_slicer.h"

#include <algorithm>
#include <cstring>
#include <memory>

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

// Copies one key's values. A width known at compile time (the common
// small rows) becomes a few loads and stores instead of a call to memcpy.
template <size_t kWidth>
struct FixedCopy {
  size_t width() const { return kWidth; }
  void operator()(char* dst, const char* src) const {
    std::memcpy(dst, src, kWidth);
  }
};

struct AnyCopy {
  size_t bytes;
  size_t width() const { return bytes; }
  void operator()(char* dst, const char* src) const {
    std::memcpy(dst, src, bytes);
  }
};

// Calls `body(copy)` with the copier for rows of `width` bytes.
template <typename Body>
void WithRowCopy(size_t width, const Body& body) {
  switch (width) {
    case 4:
      return body(FixedCopy<4>());
    case 8:
      return body(FixedCopy<8>());
    case 16:
      return body(FixedCopy<16>());
    case 32:
      return body(FixedCopy<32>());
    case 64:
      return body(FixedCopy<64>());
    case 128:
      return body(FixedCopy<128>());
    case 256:
      return body(FixedCopy<256>());
    case 512:
      return body(FixedCopy<512>());
    default:
      return body(AnyCopy{width});
  }
}

// Where the next key of one server's slice goes.
struct SliceCursor {
  Key* keys;
  uint32_t* positions;
  char* vals;
  int* lens;
};

// Moves every key (with its position and `copy.width()` bytes of values
// when kWithVals) to the cursor of its owner.
template <bool kWithVals, typename Copy>
void ScatterFixed(const Key* keys, const uint32_t* owner, size_t n,
                  const char* vals, const Copy& copy, SliceCursor* cursors) {
  const size_t width = copy.width();
  for (size_t i = 0; i < n; ++i) {
    SliceCursor& c = cursors[owner[i]];
    *c.keys++ = keys[i];
    *c.positions++ = static_cast<uint32_t>(i);
    if (kWithVals) {
      copy(c.vals, vals + i * width);
      c.vals += width;
    }
  }
}

// The same for per-key lengths.
void ScatterVariable(const Key* keys, const uint32_t* owner, size_t n,
                     const char* vals, const int* lens, size_t elem_size,
                     SliceCursor* cursors) {
  for (size_t i = 0; i < n; ++i) {
    SliceCursor& c = cursors[owner[i]];
    *c.keys++ = keys[i];
    *c.positions++ = static_cast<uint32_t>(i);
    *c.lens++ = lens[i];
    const size_t bytes = static_cast<size_t>(lens[i]) * elem_size;
    if (bytes > 0) std::memcpy(c.vals, vals, bytes);
    c.vals += bytes;
    vals += bytes;
  }
}

}  // namespace

absl::StatusOr<std::vector<KVSlice>> SliceRequest(const KeyRangeMap& ranges,
                                                  const SArray<Key>& keys,
                                                  const Buffer& vals,
                                                  size_t elem_size,
                                                  const SArray<int>& lens) {
  absl::Status s = CheckRequest(keys, vals, elem_size, lens);
  if (!s.ok()) return s;
  std::vector<KVSlice> slices;
  const size_t n = keys.size();
  if (n == 0) return slices;
  const int num_servers = ranges.num_servers();
  if (num_servers == 1) {  // every key is rank 0's: no need to look
    slices.push_back(KVSlice{0, keys, vals, lens, {}});
    return slices;
  }
  std::unique_ptr<uint32_t[]> owner(new uint32_t[n]);
  ranges.OwnersOf(keys.data(), n, owner.get());
  std::vector<uint32_t> counts(num_servers, 0);
  std::vector<size_t> val_bytes(num_servers, 0);
  for (size_t i = 0; i < n; ++i) ++counts[owner[i]];
  for (int r = 0; r < num_servers; ++r) {
    if (counts[r] == n) {  // one server: no copy
      slices.push_back(KVSlice{r, keys, vals, lens, {}});
      return slices;
    }
  }
  const size_t width = lens.empty() ? vals.size() / n : 0;
  if (!lens.empty()) {
    for (size_t i = 0; i < n; ++i) {
      val_bytes[owner[i]] += static_cast<size_t>(lens[i]) * elem_size;
    }
  }
  std::vector<SliceCursor> cursors(num_servers);
  std::vector<int> slice_of(num_servers, -1);
  for (int r = 0; r < num_servers; ++r) {
    if (counts[r] == 0) continue;
    slice_of[r] = static_cast<int>(slices.size());
    KVSlice slice;
    slice.server_rank = r;
    slice.keys = SArray<Key>(counts[r]);
    slice.positions = SArray<uint32_t>(counts[r]);
    if (!vals.empty()) {
      slice.vals =
          Buffer::Allocate(lens.empty() ? counts[r] * width : val_bytes[r]);
    }
    if (!lens.empty()) slice.lens = SArray<int>(counts[r]);
    cursors[r] = SliceCursor{slice.keys.data(), slice.positions.data(),
                             slice.vals.mutable_data(), slice.lens.data()};
    slices.push_back(std::move(slice));
  }
  if (!lens.empty()) {
    ScatterVariable(keys.data(), owner.get(), n, vals.data(), lens.data(),
                    elem_size, cursors.data());
  } else if (vals.empty()) {
    ScatterFixed<false>(keys.data(), owner.get(), n, nullptr, AnyCopy{0},
                        cursors.data());
  } else {
    WithRowCopy(width, [&](const auto& copy) {
      ScatterFixed<true>(keys.data(), owner.get(), n, vals.data(), copy,
                         cursors.data());
    });
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
      if (slice.lens.empty() && width > 0 && width <= max_bytes) {
        // Fixed width: as many whole keys as fit, without a walk per key.
        end = std::min(n, begin + max_bytes / width);
        bytes = (end - begin) * width;
      }
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

std::vector<KVSlice> SplitPullSlices(std::vector<KVSlice> slices,
                                     size_t max_keys) {
  if (max_keys == 0) return slices;
  std::vector<KVSlice> out;
  out.reserve(slices.size());
  for (KVSlice& slice : slices) {
    const size_t n = slice.keys.size();
    if (n <= max_keys) {
      out.push_back(std::move(slice));
      continue;
    }
    // Parts of equal size, the fewest that keep each within max_keys.
    const size_t num_parts = (n + max_keys - 1) / max_keys;
    for (size_t p = 0; p < num_parts; ++p) {
      const size_t begin = n * p / num_parts;
      const size_t end = n * (p + 1) / num_parts;
      KVSlice part;
      part.server_rank = slice.server_rank;
      part.keys = slice.keys.Segment(begin, end);
      if (slice.positions.empty()) {
        part.first_position =
            slice.first_position + static_cast<uint32_t>(begin);
      } else {
        part.positions = slice.positions.Segment(begin, end);
      }
      out.push_back(std::move(part));
    }
  }
  return out;
}

namespace {

// Per-key counts of the answers, in the caller's order: the general merge,
// for answers with lens or with different widths.
absl::Status MergeVariable(const std::vector<KVSlice>& slices,
                           const std::vector<PulledPart>& parts,
                           size_t num_keys, size_t elem_size, Buffer* vals,
                           SArray<int>* lens) {
  std::vector<int> count(num_keys, 0);
  for (size_t i = 0; i < slices.size(); ++i) {
    const KVSlice& slice = slices[i];
    const PulledPart& part = parts[i];
    const size_t n = slice.keys.size();
    const size_t part_vals = part.vals.size() / elem_size;
    for (size_t j = 0; j < n; ++j) {
      size_t pos = slice.positions.empty() ? slice.first_position + j
                                           : slice.positions[j];
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
      slices[0].first_position == 0 && vals->size() != total) {
    *vals = parts[0].vals;  // the whole answer, in order: no copy
    return absl::OkStatus();
  }
  if (vals->size() != total) *vals = Buffer::Allocate(total);
  for (size_t i = 0; i < slices.size(); ++i) {
    const char* src = parts[i].vals.data();
    for (size_t j = 0; j < slices[i].keys.size(); ++j) {
      size_t pos = slices[i].positions.empty() ? slices[i].first_position + j
                                               : slices[i].positions[j];
      size_t n = offsets[pos + 1] - offsets[pos];
      std::memcpy(vals->mutable_data() + offsets[pos], src, n);
      src += n;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPulledPart(const KVSlice& slice, const PulledPart& part,
                             size_t elem_size) {
  const size_t n = slice.keys.size();
  const size_t part_vals = part.vals.size() / elem_size;
  if (part.lens.empty()) {
    if ((n == 0 && part_vals != 0) || (n != 0 && part_vals % n != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("server ", slice.server_rank, " sent ", part_vals,
                       " values for ", n, " keys asked"));
    }
    return absl::OkStatus();
  }
  if (part.lens.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("server ", slice.server_rank, " sent ", part.lens.size(),
                     " lens for ", n, " keys asked"));
  }
  uint64_t sum = 0;
  for (int len : part.lens) {
    if (len < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "server ", slice.server_rank, " sent a negative length ", len));
    }
    sum += static_cast<uint64_t>(len);
  }
  if (sum != part_vals) {
    return absl::InvalidArgumentError(
        absl::StrCat("server ", slice.server_rank, " sent lens summing to ",
                     sum, " with ", part_vals, " values"));
  }
  return absl::OkStatus();
}

std::vector<KVSlice> CutPullSlice(const KVSlice& whole,
                                  const KeyRangeMap& ranges) {
  const size_t n = whole.keys.size();
  std::vector<uint32_t> owners(n);
  ranges.OwnersOf(whole.keys.data(), n, owners.data());
  std::vector<uint32_t> order;  // owners as they first appear
  std::vector<size_t> count(ranges.num_servers(), 0);
  for (uint32_t o : owners) {
    if (count[o]++ == 0) order.push_back(o);
  }
  std::vector<KVSlice> out;
  for (uint32_t o : order) {
    KVSlice s;
    s.server_rank = static_cast<int>(o);
    s.keys = SArray<Key>(count[o]);
    s.positions = SArray<uint32_t>(count[o]);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (owners[i] != o) continue;
      s.keys[k] = whole.keys[i];
      s.positions[k++] = whole.positions.empty()
                             ? whole.first_position + static_cast<uint32_t>(i)
                             : whole.positions[i];
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<KVSlice> SubSliceOf(const KVSlice& whole,
                                   const SArray<Key>& keys, int rank) {
  KVSlice s;
  s.server_rank = rank;
  s.keys = keys;
  s.positions = SArray<uint32_t>(keys.size());
  size_t j = 0;
  for (size_t i = 0; i < keys.size(); ++i, ++j) {
    while (j < whole.keys.size() && whole.keys[j] != keys[i]) ++j;
    if (j == whole.keys.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", keys[i], " (", i + 1, " of ", keys.size(),
                       ") is not in the slice of server ", whole.server_rank,
                       " in its order"));
    }
    s.positions[i] = whole.positions.empty()
                         ? whole.first_position + static_cast<uint32_t>(j)
                         : whole.positions[j];
  }
  return s;
}

void PlacePulledPart(const KVSlice& slice, const char* vals, size_t row_bytes,
                     char* dst) {
  const size_t n = slice.keys.size();
  if (n == 0 || row_bytes == 0) return;
  if (slice.positions.empty()) {  // the caller's keys, in order
    std::memcpy(dst + slice.first_position * row_bytes, vals, n * row_bytes);
    return;
  }
  const uint32_t* pos = slice.positions.data();
  WithRowCopy(row_bytes, [&](const auto& copy) {
    for (size_t j = 0; j < n; ++j) {
      copy(dst + pos[j] * row_bytes, vals + j * row_bytes);
    }
  });
}

absl::Status MergePulled(const std::vector<KVSlice>& slices,
                         const std::vector<PulledPart>& parts, size_t num_keys,
                         size_t elem_size, Buffer* vals, SArray<int>* lens) {
  // Check every answer, and whether all carry the same values per key.
  bool uniform = true;
  size_t width = 0;  // values per key, when uniform
  for (size_t i = 0; i < slices.size(); ++i) {
    const KVSlice& slice = slices[i];
    const PulledPart& part = parts[i];
    absl::Status valid = CheckPulledPart(slice, part, elem_size);
    if (!valid.ok()) return valid;
    const size_t n = slice.keys.size();
    const size_t part_vals = part.vals.size() / elem_size;
    if (!part.lens.empty() || n == 0 || (i > 0 && part_vals / n != width)) {
      uniform = false;
    } else {
      width = part_vals / n;
    }
  }
  if (!uniform) {
    return MergeVariable(slices, parts, num_keys, elem_size, vals, lens);
  }
  if (lens != nullptr) {
    *lens = SArray<int>(num_keys, static_cast<int>(width));
  }
  const size_t row = width * elem_size;
  const size_t total = num_keys * row;
  if (slices.size() == 1 && slices[0].positions.empty() &&
      slices[0].first_position == 0) {
    if (vals->size() != total) {
      *vals = parts[0].vals;  // the whole answer, in order: no copy
    } else if (total > 0) {
      std::memcpy(vals->mutable_data(), parts[0].vals.data(), total);
    }
    return absl::OkStatus();
  }
  if (vals->size() != total) *vals = Buffer::Allocate(total);
  if (total == 0) return absl::OkStatus();  // keys without values
  char* dst = vals->mutable_data();
  for (size_t i = 0; i < slices.size(); ++i) {
    PlacePulledPart(slices[i], parts[i].vals.data(), row, dst);
  }
  return absl::OkStatus();
}

}  // namespace petrel

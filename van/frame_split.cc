#include "van/frame_split.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

constexpr size_t kFlagsOffset = 6;  // in the wire prefix (wire_codec.h)

uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, sizeof(v)); }
void PutU16(char* p, uint16_t v) { std::memcpy(p, &v, sizeof(v)); }

// Parts of a data frame of `size` bytes: an empty frame is one empty part.
uint64_t PartsOf(uint64_t size, uint64_t part) {
  return size == 0 ? 1 : (size - 1) / part + 1;
}

uint64_t TotalParts(const std::vector<Buffer>& data, uint64_t part) {
  uint64_t n = 0;
  for (const Buffer& b : data) n += PartsOf(b.size(), part);
  return n;
}

// The size of part `j` of a frame of `size` bytes split at `part`.
uint64_t PartSize(uint64_t size, uint64_t part, uint64_t j) {
  return std::min(part, size - j * part);
}

}  // namespace

size_t SplitPartBytes(const VanOptions& options) {
  if (options.split_frame_bytes >= 0) {
    return static_cast<size_t>(options.split_frame_bytes);
  }
  return options.curve.enabled() ? kDefaultCurvePartBytes : 0;
}

bool IsSplitHeader(const char* data, size_t size) {
  if (size < kWirePrefixBytes) return false;
  uint32_t magic;
  uint16_t version, flags;
  std::memcpy(&magic, data, sizeof(magic));
  std::memcpy(&version, data + 4, sizeof(version));
  std::memcpy(&flags, data + kFlagsOffset, sizeof(flags));
  return magic == kWireMagic && version == kWireVersion && flags == kSplitFlag;
}

std::vector<Buffer> SplitFrames(Buffer header, std::vector<Buffer> data,
                                size_t part_bytes) {
  uint64_t part = part_bytes;
  size_t largest = 0;
  for (const Buffer& b : data) largest = std::max(largest, b.size());
  if (part > 0 && data.size() <= static_cast<size_t>(kMaxSplitParts)) {
    while (part < largest && TotalParts(data, part) > kMaxSplitParts) {
      part *= 2;
    }
  }
  std::vector<Buffer> out;
  if (part == 0 || part >= largest ||
      data.size() > static_cast<size_t>(kMaxSplitParts)) {
    out.reserve(data.size() + 1);
    out.push_back(std::move(header));
    for (Buffer& b : data) out.push_back(std::move(b));
    return out;
  }
  CHECK_GE(header.size(), kWirePrefixBytes);
  PutU16(header.mutable_data() + kFlagsOffset, kSplitFlag);
  Buffer layout = Buffer::Allocate(8 * (1 + data.size()));
  PutU64(layout.mutable_data(), part);
  for (size_t i = 0; i < data.size(); ++i) {
    PutU64(layout.mutable_data() + 8 * (i + 1), data[i].size());
  }
  out.reserve(2 + TotalParts(data, part));
  out.push_back(std::move(header));
  out.push_back(std::move(layout));
  for (Buffer& b : data) {
    if (b.size() <= part) {
      out.push_back(std::move(b));
      continue;
    }
    for (uint64_t j = 0; j < PartsOf(b.size(), part); ++j) {
      out.push_back(b.Slice(j * part, PartSize(b.size(), part, j)));
    }
  }
  return out;
}

absl::StatusOr<std::vector<Buffer>> JoinSplitFrames(
    Buffer* header, std::vector<Buffer> wire, const DecodeLimits& limits) {
  if (!IsSplitHeader(*header)) {
    return absl::InvalidArgumentError("not the header of a split message");
  }
  if (wire.empty()) {
    return absl::InvalidArgumentError("split message without a layout frame");
  }
  const Buffer& layout = wire[0];
  if (layout.size() < 16 || layout.size() % 8 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("split layout of ", layout.size(),
                     " bytes, expected 8 * (1 + data frames)"));
  }
  const size_t frames = layout.size() / 8 - 1;
  if (frames > static_cast<size_t>(limits.max_frames)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("split layout lists ", frames,
                     " data frames, over the limit of ", limits.max_frames));
  }
  const uint64_t part = GetU64(layout.data());
  if (part == 0) return absl::InvalidArgumentError("split part size 0");
  std::vector<uint64_t> sizes(frames);
  const uint64_t max_bytes = static_cast<uint64_t>(limits.max_message_bytes);
  uint64_t total = 0;
  uint64_t parts = 0;
  for (size_t i = 0; i < frames; ++i) {
    sizes[i] = GetU64(layout.data() + 8 * (i + 1));
    if (sizes[i] > max_bytes - total) {
      return absl::ResourceExhaustedError(
          absl::StrCat("split layout declares more than the limit of ",
                       limits.max_message_bytes, " bytes"));
    }
    total += sizes[i];
    const uint64_t n = PartsOf(sizes[i], part);
    if (n > static_cast<uint64_t>(kMaxSplitParts) - parts) {
      return absl::ResourceExhaustedError(
          absl::StrCat("split layout declares more than ", kMaxSplitParts,
                       " parts (part size ", part, ")"));
    }
    parts += n;
  }
  if (wire.size() - 1 != parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("split layout declares ", parts, " parts but ",
                     wire.size() - 1, " part frames came"));
  }
  // Every part's size first, so that nothing is allocated for a lie.
  for (size_t i = 0, k = 1; i < frames; ++i) {
    for (uint64_t j = 0; j < PartsOf(sizes[i], part); ++j, ++k) {
      const uint64_t expected = sizes[i] == 0 ? 0 : PartSize(sizes[i], part, j);
      if (wire[k].size() != expected) {
        return absl::InvalidArgumentError(
            absl::StrCat("part ", j, " of data frame ", i + 1, " has ",
                         wire[k].size(), " bytes, the layout says ", expected));
      }
    }
  }
  std::vector<Buffer> out;
  out.reserve(frames);
  for (size_t i = 0, k = 1; i < frames; ++i) {
    const uint64_t n = PartsOf(sizes[i], part);
    if (n == 1) {
      out.push_back(std::move(wire[k++]));
      continue;
    }
    Buffer joined = Buffer::Allocate(sizes[i]);
    for (uint64_t j = 0, at = 0; j < n; ++j, ++k) {
      std::memcpy(joined.mutable_data() + at, wire[k].data(), wire[k].size());
      at += wire[k].size();
      wire[k] = Buffer();  // release the part (its ZeroMQ message) now
    }
    out.push_back(std::move(joined));
  }
  PutU16(header->mutable_data() + kFlagsOffset, 0);
  return out;
}

}  // namespace petrel

#include "tests/fuzz/fuzz_input.h"

#include <algorithm>
#include <cstring>

#include "van/wire_codec.h"

namespace petrel {
namespace {

constexpr uint8_t kFrameCountMask = 0x1f;
constexpr uint8_t kAddPrefixBit = 0x20;
constexpr uint8_t kMisalignBit = 0x40;

// A frame of `size` bytes copied from `src`, at an odd address if asked.
Buffer Frame(const uint8_t* src, size_t size, bool misalign) {
  if (!misalign) return Buffer::CopyOf(src, size);
  Buffer storage = Buffer::Allocate(size + 1);
  if (size > 0) std::memcpy(storage.mutable_data() + 1, src, size);
  return storage.Slice(1, size);
}

// A header frame: the wire prefix followed by `meta` bytes.
Buffer WithPrefix(const uint8_t* meta, size_t size) {
  Buffer header = Buffer::Allocate(kWirePrefixBytes + size);
  char* p = header.mutable_data();
  uint32_t magic = kWireMagic;
  uint16_t version = kWireVersion;
  uint16_t flags = 0;
  uint32_t len = static_cast<uint32_t>(size);
  std::memcpy(p, &magic, 4);
  std::memcpy(p + 4, &version, 2);
  std::memcpy(p + 6, &flags, 2);
  std::memcpy(p + 8, &len, 4);
  if (size > 0) std::memcpy(p + kWirePrefixBytes, meta, size);
  return header;
}

}  // namespace

FuzzInput ParseFuzzInput(const uint8_t* data, size_t size) {
  FuzzInput input;
  if (size == 0) return input;
  const uint8_t flags = data[0];
  const size_t num_frames = flags & kFrameCountMask;
  size_t pos = 1;
  for (size_t i = 0; i <= num_frames; ++i) {
    size_t len = 0;
    if (pos + 2 <= size) {
      len = static_cast<size_t>(data[pos]) | static_cast<size_t>(data[pos + 1])
                                                 << 8;
      pos += 2;
    } else {
      pos = size;
    }
    len = std::min(len, size - pos);
    const uint8_t* bytes = data + pos;
    pos += len;
    if (i == 0) {
      input.header = (flags & kAddPrefixBit) ? WithPrefix(bytes, len)
                                             : Frame(bytes, len, false);
    } else {
      input.frames.push_back(Frame(bytes, len, flags & kMisalignBit));
    }
  }
  return input;
}

std::string EncodeFuzzInput(const std::vector<std::string>& frames,
                            bool add_prefix, bool misalign) {
  std::string out;
  uint8_t flags = static_cast<uint8_t>((frames.size() - 1) & kFrameCountMask);
  if (add_prefix) flags |= kAddPrefixBit;
  if (misalign) flags |= kMisalignBit;
  out.push_back(static_cast<char>(flags));
  for (const std::string& f : frames) {
    size_t len = std::min<size_t>(f.size(), 0xffff);
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
    out.append(f, 0, len);
  }
  return out;
}

}  // namespace petrel

// Split frames: large data frames travel as several ZeroMQ frames (parts).
//
// With CURVE on, ZeroMQ encrypts each frame whole on the sending
// connection's I/O thread and decrypts it whole on the receiver's, copying
// it into and out of the cipher: a 1 MiB frame is encrypted, then sent, then
// decrypted, one core at a time. Sent as parts, the receiver decrypts part k
// while the sender encrypts part k + 1, so the two cores overlap. ZmqVan
// splits the data frames of the messages it sends when CURVE is on
// (VanOptions::split_frame_bytes) and joins every split message it receives
// before the decoder sees it; nothing above the van knows.
//
// On the wire (docs/wire.md, "Split frames"), a split message is the header
// frame with flag kSplitFlag, a layout frame, and the parts. The layout is
// little-endian uint64s: the part size P, then the size S_i of each data
// frame i. Data frame i travels as max(1, ceil(S_i / P)) parts, each of P
// bytes but the last (1..P bytes; one empty part for an empty frame).
//
// Thread safety: stateless functions, safe from any thread.
#ifndef PETREL_VAN_FRAME_SPLIT_H_
#define PETREL_VAN_FRAME_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

#include "van/buffer.h"
#include "van/van.h"
#include "van/wire_codec.h"

namespace petrel {

// The header flag of a split message (the hello's is 1).
inline constexpr uint16_t kSplitFlag = 2;
// Most parts in one split message, whatever its size: a sender picks a
// part size that keeps within it; a receiver refuses more.
inline constexpr int kMaxSplitParts = 4096;
// Most frames a split message has after the header: its layout and parts.
inline constexpr int kMaxSplitWireFrames = kMaxSplitParts + 1;
// The part size ZmqVan uses when CURVE is on (docs/security.md, "Cost").
inline constexpr size_t kDefaultCurvePartBytes = 128 << 10;

// The part size of the data frames a van with `options` sends (0: none is
// split): VanOptions::split_frame_bytes, or by default
// kDefaultCurvePartBytes with CURVE on and 0 without.
size_t SplitPartBytes(const VanOptions& options);

// Whether `data` is the header frame of a split message of this version.
bool IsSplitHeader(const char* data, size_t size);
inline bool IsSplitHeader(const Buffer& header) {
  return IsSplitHeader(header.data(), header.size());
}

// The frames to send for `header` (EncodeHeader's, not shared with anyone:
// its flag is set in place when splitting) and `data`. Unchanged (header,
// then data) when `part_bytes` is 0 or no data frame is larger than it;
// otherwise the header with kSplitFlag, the layout and the parts, which share
// the data's storage (no copy). The part size is `part_bytes`, doubled as
// often as needed to keep within kMaxSplitParts.
std::vector<Buffer> SplitFrames(Buffer header, std::vector<Buffer> data,
                                size_t part_bytes);

// Joins a split message: `wire` is what followed the header (the layout,
// then the parts). Returns the data frames, each in one Buffer (its parts
// copied together into aligned storage; a frame of one part is kept as it
// came), and clears kSplitFlag in `*header`, which must be a split header.
// The parts are released as they are copied. Errors name the broken rule:
// InvalidArgument for a layout that does not parse or parts that do not
// match it (their number or a part's size); ResourceExhausted for more than
// `limits.max_frames` data frames, more than kMaxSplitParts parts, or more
// than `limits.max_message_bytes` in all.
absl::StatusOr<std::vector<Buffer>> JoinSplitFrames(Buffer* header,
                                                    std::vector<Buffer> wire,
                                                    const DecodeLimits& limits);

}  // namespace petrel

#endif  // PETREL_VAN_FRAME_SPLIT_H_

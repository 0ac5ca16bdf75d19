#include "worker/data/resume_position.h"

#include "absl/strings/str_cat.h"

#include "base/checksum.h"
#include "worker/data/cache_key.h"

namespace petrel {

absl::StatusOr<uint64_t> InputFingerprint(const ReaderOptions& options) {
  absl::StatusOr<CacheKey> key = MakeCacheKey(options);
  if (!key.ok()) return key.status();
  const uint64_t sum = Checksum64(key->key);
  return sum == 0 ? 1 : sum;
}

bool SeekToPosition(const pb::WorkerPosition& position, uint64_t fingerprint,
                    Reader* reader, std::string* why_not) {
  if (position.byte_offset() < 0 || position.input_fingerprint() == 0) {
    *why_not = "the checkpoint recorded no byte offset";
    return false;
  }
  if (fingerprint == 0 || position.input_fingerprint() != fingerprint) {
    *why_not =
        "the training files or reader settings differ from the checkpoint's "
        "(size, mtime, inode or content)";
    return false;
  }
  absl::Status seek = reader->SeekToOffset(position.byte_offset());
  if (!seek.ok()) {
    *why_not = std::string(seek.message());
    return false;
  }
  return true;
}

}  // namespace petrel

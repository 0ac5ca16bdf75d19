#include "worker/reader.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "worker/caching_reader.h"
#include "worker/criteo_reader.h"
#include "worker/libsvm_reader.h"

namespace petrel {

Reader::~Reader() = default;

absl::Status Reader::SeekToOffset(int64_t offset) {
  return absl::FailedPreconditionError(
      absl::StrCat("this reader cannot seek to byte offset ", offset));
}

namespace {

absl::StatusOr<std::unique_ptr<Reader>> OpenTextReader(
    const ReaderOptions& options) {
  switch (options.format) {
    case DataFormat::kLibsvm:
      return OpenLibsvmReader(options);
    case DataFormat::kCriteo:
      return OpenCriteoReader(options);
  }
  return absl::InvalidArgumentError("unknown data format");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Reader>> OpenReader(
    const ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<Reader>> text = OpenTextReader(options);
  if (!text.ok() || options.cache.mode == CacheMode::kOff) return text;
  absl::StatusOr<std::unique_ptr<CachingReader>> cached =
      CachingReader::Open(options, std::move(*text));
  if (!cached.ok()) return cached.status();
  return std::unique_ptr<Reader>(std::move(*cached));
}

}  // namespace petrel

#include "worker/data/reader.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "worker/data/caching_reader.h"
#include "worker/data/criteo_reader.h"
#include "worker/data/cross_features.h"
#include "worker/data/libsvm_reader.h"

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

namespace {

absl::StatusOr<std::unique_ptr<Reader>> OpenUncrossedReader(
    const ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<Reader>> text = OpenTextReader(options);
  if (!text.ok() || options.cache.mode == CacheMode::kOff) return text;
  absl::StatusOr<std::unique_ptr<CachingReader>> cached =
      CachingReader::Open(options, std::move(*text));
  if (!cached.ok()) return cached.status();
  return std::unique_ptr<Reader>(std::move(*cached));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Reader>> OpenReader(
    const ReaderOptions& options) {
  if (options.crosses.empty()) return OpenUncrossedReader(options);
  ReaderOptions inner = options;
  inner.crosses.clear();
  inner.with_fields = true;
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenUncrossedReader(inner);
  if (!reader.ok()) return reader;
  return NewCrossingReader(std::move(*reader), options.crosses,
                           options.cross_base_fields, options.with_fields);
}

}  // namespace petrel

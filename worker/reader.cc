#include "worker/reader.h"

#include "worker/criteo_reader.h"
#include "worker/libsvm_reader.h"

namespace petrel {

Reader::~Reader() = default;

absl::StatusOr<std::unique_ptr<Reader>> OpenReader(
    const ReaderOptions& options) {
  switch (options.format) {
    case DataFormat::kLibsvm:
      return OpenLibsvmReader(options);
    case DataFormat::kCriteo:
      return OpenCriteoReader(options);
  }
  return absl::InvalidArgumentError("unknown data format");
}

}  // namespace petrel

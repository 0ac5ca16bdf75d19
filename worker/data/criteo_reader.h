// The Criteo display-advertising TSV format:
// `label \t I1 ... I13 \t C1 ... C26` (40 tab-separated fields).
//
// The label is 0 or 1 (-1 is read as 0). Empty integer or categorical
// fields are missing and give no feature. Integer field Ii (i = 1..13) with
// value v gives key CriteoIntegerKey(i - 1, v); categorical field Cj
// (j = 1..26) with text t gives key HashFeature(12 + j, t); every value is 1
// (worker/data/feature_hash.h). An empty line is skipped. Field numbers and
// numeric features, when asked for, are as worker/data/reader.h describes.
//
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_DATA_CRITEO_READER_H_
#define PETREL_WORKER_DATA_CRITEO_READER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "job/criteo.h"
#include "worker/data/batch.h"
#include "worker/data/reader.h"

namespace petrel {

// A LineParser (worker/data/text_reader.h) for Criteo TSV. InvalidArgument
// kinds: not 40 fields; label empty, not a number or not 0, 1 or -1; an integer
// field that is not a 64-bit integer.
absl::StatusOr<bool> ParseCriteoLine(absl::string_view line,
                                     const ReaderOptions& options,
                                     Batch* batch);
// The same with default options (no fields, no numeric features).
absl::StatusOr<bool> ParseCriteoLine(absl::string_view line, Batch* batch);

// Opens a Criteo Reader over options' files (options.format is ignored).
absl::StatusOr<std::unique_ptr<Reader>> OpenCriteoReader(
    const ReaderOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CRITEO_READER_H_

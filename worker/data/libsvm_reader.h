// The libsvm text format: `label idx:val idx:val ... [# comment]`.
//
// Labels are 0/1 or -1/+1 (-1 is read as 0), in any float spelling ("+1",
// "1.0"). Indices are decimal uint64 (kept as keys, in file order, without
// sorting or deduplication); values are finite floats. Tokens are separated
// by spaces or tabs; `qid:N` is ignored; everything after '#' is a comment.
//
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_DATA_LIBSVM_READER_H_
#define PETREL_WORKER_DATA_LIBSVM_READER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "worker/data/batch.h"
#include "worker/data/reader.h"

namespace petrel {

// A LineParser (worker/data/text_reader.h) for libsvm. InvalidArgument kinds:
// label not a number / not 0, 1 or -1; a feature without ':'; an index that
// is not a non-negative integer or overflows 64 bits; a value that is not a
// finite float. With options.with_fields every feature's field is 0; there
// are no numeric features (num_numeric stays 0).
absl::StatusOr<bool> ParseLibsvmLine(absl::string_view line,
                                     const ReaderOptions& options,
                                     Batch* batch);
// The same with default options (no fields).
absl::StatusOr<bool> ParseLibsvmLine(absl::string_view line, Batch* batch);

// Opens a libsvm Reader over options' files (options.format is ignored).
absl::StatusOr<std::unique_ptr<Reader>> OpenLibsvmReader(
    const ReaderOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_LIBSVM_READER_H_

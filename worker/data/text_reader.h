// TextReader: the Reader for line-oriented formats. It takes lines from a
// ShardedLineReader, hands each to a format's line parser, and turns parser
// errors into "FILE:LINE: ..." errors or skipped, counted lines.
//
// Thread safety: not thread-safe.
#ifndef PETREL_WORKER_DATA_TEXT_READER_H_
#define PETREL_WORKER_DATA_TEXT_READER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "worker/data/batch.h"
#include "worker/data/reader.h"
#include "worker/data/sharded_line_reader.h"

namespace petrel {

// Appends the example on `line` to *batch and returns true, or returns false
// for a line without an example (blank or comment only) and leaves *batch
// as it was. Fills the optional batch parts that options.with_fields and
// options.with_numeric ask for (the other options are ignored).
// InvalidArgument describing the problem (without file or line) for a
// malformed line; *batch may then hold part of the example (Batch::Truncate
// removes it).
using LineParser = absl::StatusOr<bool> (*)(absl::string_view line,
                                            const ReaderOptions& options,
                                            Batch* batch);

class TextReader : public Reader {
 public:
  // Opens `options.files` for this worker's share and parses each line with
  // `parser`. Errors as ShardedLineReader::Open.
  static absl::StatusOr<std::unique_ptr<Reader>> Open(
      const ReaderOptions& options, LineParser parser);

  TextReader(std::unique_ptr<ShardedLineReader> lines, LineParser parser,
             const ReaderOptions& options);

  absl::StatusOr<bool> Next(int max_examples, Batch* batch) override;
  absl::Status Rewind() override;
  int64_t malformed_lines() const override { return malformed_lines_; }
  int64_t next_offset() const override;
  double fraction_read() const override;
  absl::Status SeekToOffset(int64_t offset) override;

 private:
  // The error for a parser failure on the current line: file, line, message.
  absl::Status LineError(const absl::Status& parse_error);

  std::unique_ptr<ShardedLineReader> lines_;
  const LineParser parser_;
  const ReaderOptions options_;
  int64_t malformed_lines_ = 0;
};

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_TEXT_READER_H_

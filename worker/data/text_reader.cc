#include "worker/data/text_reader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {

TextReader::TextReader(std::unique_ptr<ShardedLineReader> lines,
                       LineParser parser, const ReaderOptions& options)
    : lines_(std::move(lines)), parser_(parser), options_(options) {}

absl::Status TextReader::LineError(const absl::Status& parse_error) {
  absl::StatusOr<int64_t> line = lines_->line_number();
  if (!line.ok()) return line.status();
  return absl::InvalidArgumentError(
      absl::StrCat(lines_->file(), ":", *line, ": ", parse_error.message()));
}

absl::StatusOr<bool> TextReader::Next(int max_examples, Batch* batch) {
  batch->Clear();
  if (max_examples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_examples ", max_examples, " is below 1"));
  }
  absl::string_view line;
  while (batch->size() < static_cast<size_t>(max_examples)) {
    absl::StatusOr<bool> more = lines_->NextLine(&line);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!KeepLine(options_.holdout, line)) continue;
    const size_t examples = batch->size();
    absl::StatusOr<bool> parsed = parser_(line, options_, batch);
    if (parsed.ok()) continue;
    absl::Status error = LineError(parsed.status());
    if (!options_.skip_malformed ||
        error.code() != absl::StatusCode::kInvalidArgument) {
      return error;
    }
    batch->Truncate(examples);
    ++malformed_lines_;
    LOG_FIRST_N(WARNING, 10) << "skipping malformed line: " << error.message();
  }
  return batch->size() > 0;
}

absl::Status TextReader::Rewind() {
  lines_->Rewind();
  return absl::OkStatus();
}

int64_t TextReader::next_offset() const {
  return static_cast<int64_t>(lines_->next_offset());
}

double TextReader::fraction_read() const {
  const uint64_t begin = lines_->share_begin();
  const uint64_t end = lines_->share_end();
  if (end <= begin) return 1;
  const uint64_t at = std::min(std::max(lines_->next_offset(), begin), end);
  return static_cast<double>(at - begin) / static_cast<double>(end - begin);
}

absl::Status TextReader::SeekToOffset(int64_t offset) {
  if (offset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("byte offset ", offset, " is negative"));
  }
  return lines_->Seek(static_cast<uint64_t>(offset));
}

absl::StatusOr<std::unique_ptr<Reader>> TextReader::Open(
    const ReaderOptions& options, LineParser parser) {
  absl::StatusOr<std::unique_ptr<ShardedLineReader>> lines =
      ShardedLineReader::Open(options.files, options.worker_rank,
                              options.num_workers, options.read_buffer_bytes);
  if (!lines.ok()) return lines.status();
  return std::unique_ptr<Reader>(
      new TextReader(std::move(*lines), parser, options));
}

}  // namespace petrel

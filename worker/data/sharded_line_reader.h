// ShardedLineReader: the lines of one worker's byte range of a list of files,
// read with large buffered read(2) calls (see worker/data/reader.h for how the
// range is chosen). Lines are returned without '\n' and a trailing '\r'.
//
// Line numbers are 1-based within each file. For a share that starts in the
// middle of a file, the number of the first line is found lazily (by
// counting newlines before it) the first time line_number() is asked.
//
// Thread safety: not thread-safe. Ownership: owns its file descriptor.
#ifndef PETREL_WORKER_DATA_SHARDED_LINE_READER_H_
#define PETREL_WORKER_DATA_SHARDED_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

class ShardedLineReader {
 public:
  // Stats `files` and positions at the start of share `rank` of
  // `num_workers`. InvalidArgument for bad arguments, NotFound for a missing
  // file, DataLoss for one that cannot be stat'ed.
  static absl::StatusOr<std::unique_ptr<ShardedLineReader>> Open(
      const std::vector<std::string>& files, int rank, int num_workers,
      size_t buffer_bytes);

  ShardedLineReader(const ShardedLineReader&) = delete;
  ShardedLineReader& operator=(const ShardedLineReader&) = delete;
  ~ShardedLineReader();

  // Sets *line to the next line of the share; it stays valid until the next
  // call. Returns false at the end of the share. DataLoss when a file cannot
  // be opened or read, or is shorter than when the reader was opened.
  absl::StatusOr<bool> NextLine(absl::string_view* line);

  // Goes back to the first line of the share.
  void Rewind();

  // The position of the next line NextLine would return, as an offset in
  // the concatenated files: the offset of that line's first byte, or
  // share_begin() before the share's first line was read, or an offset >=
  // share_end() once the share is exhausted. Seek(next_offset()) on a
  // reader over the same files and share returns the same lines from there.
  uint64_t next_offset() const;

  // Positions so that the next line is the share's first line starting at
  // or after `offset`: offset share_begin() is the share's start, an offset
  // >= share_end() its end, and any other offset must be a line's first
  // byte (the byte before it is '\n', or it starts a file). InvalidArgument
  // for an offset before the share or not at a line start; DataLoss when the
  // file cannot be read. The position is unchanged on error.
  absl::Status Seek(uint64_t offset);

  // File and 1-based line number of the line last returned by NextLine.
  // REQUIRES: NextLine last returned true (checked).
  const std::string& file() const;
  absl::StatusOr<int64_t> line_number();

  // The byte range [begin, end) of the concatenated files this share owns.
  uint64_t share_begin() const { return share_begin_; }
  uint64_t share_end() const { return share_end_; }

 private:
  struct FileInfo {
    std::string path;
    uint64_t size;
    uint64_t global_begin;  // offset of its first byte in the concatenation
  };

  ShardedLineReader(std::vector<FileInfo> files, uint64_t begin, uint64_t end,
                    size_t buffer_bytes);

  // Opens the next file holding lines of the share and positions at its
  // first such line. Returns false when there is none.
  absl::StatusOr<bool> OpenNextFile();
  // Skips to just after the first '\n' at or after file offset `offset`.
  // Returns false if the file ends first.
  absl::StatusOr<bool> SkipPastNewline(uint64_t offset);
  // Reads more bytes of the current file into the buffer, compacting or
  // growing it. REQUIRES: bytes remain in the file.
  absl::Status Fill();
  void CloseFile();

  const std::vector<FileInfo> files_;
  const uint64_t share_begin_;
  const uint64_t share_end_;
  std::vector<char> buffer_;

  // State of the current file.
  size_t file_index_ = 0;  // files_.size() when the share is exhausted
  int fd_ = -1;
  uint64_t read_offset_ = 0;   // file offset of the byte after buf_end_
  size_t buf_pos_ = 0;         // next unread byte in buffer_
  size_t buf_end_ = 0;         // end of valid bytes in buffer_
  uint64_t line_offset_ = 0;   // file offset of the next line's start
  uint64_t first_offset_ = 0;  // file offset of the share's first line here
  int64_t lines_read_ = 0;     // lines returned from this file
  int64_t first_line_ = 0;     // number of the first line; 0 = not known
};

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_SHARDED_LINE_READER_H_

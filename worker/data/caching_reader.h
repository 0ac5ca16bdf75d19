// CachingReader: a Reader that parses its share of the text once and
// serves later passes (epochs) from the parsed examples, kept in memory or
// in a cache file (worker/data/cache_file.h) that later runs reuse.
//
// Policy (ReaderOptions::cache):
//   kAuto:   at open, a cache file whose key matches (worker/data/cache_key.h)
//            and whose checksums verify is used: loaded into memory when it
//            fits in memory_budget_bytes, else read block by block each
//            pass. Otherwise the first pass parses the text and keeps the
//            examples in memory while they fit the budget; past the budget
//            it moves them to a new cache file.
//   kMemory: the first pass keeps the examples in memory; past the budget
//            it drops them and every pass parses the text.
//   kFile:   like kAuto, but the examples always go to (and come from) the
//            cache file, never memory.
// A cache file that is corrupt, truncated or was built from other input or
// settings is rebuilt, with a log line saying why. When the cache file
// cannot be written (unwritable directory, disk full) the reader logs it
// and parses the text every pass; it never fails for that. A pass that is
// rewound before its end keeps nothing (the next one starts over). A cache
// file that fails a block checksum while it is being read (it changed under
// a running job) is a DataLoss error naming it, never used silently.
//
// A pass that parses text can be positioned at a byte offset
// (SeekToOffset); one served from the cache cannot (its position is by
// example count).
//
// Malformed lines (skip_malformed) are counted per pass as in text mode: a
// pass from the cache adds the count of the pass that built it.
//
// Thread safety: not thread-safe (one thread, like every Reader).
#ifndef PETREL_WORKER_DATA_CACHING_READER_H_
#define PETREL_WORKER_DATA_CACHING_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "worker/data/cache_file.h"
#include "worker/data/internal/block_arena.h"
#include "worker/data/internal/cache_block.h"
#include "worker/data/reader.h"

namespace petrel {

class CachingReader : public Reader {
 public:
  enum class Source { kText, kMemory, kFile };

  // Serves `options`' share from `text` (a text Reader over it, owned) and
  // the cache options.cache asks for. InvalidArgument for a negative
  // memory budget or mode kOff.
  static absl::StatusOr<std::unique_ptr<CachingReader>> Open(
      const ReaderOptions& options, std::unique_ptr<Reader> text);

  absl::StatusOr<bool> Next(int max_examples, Batch* batch) override;
  absl::Status Rewind() override;
  int64_t malformed_lines() const override;
  // The text reader's while the pass parses text; -1 while it comes from
  // the cache.
  int64_t next_offset() const override;
  double fraction_read() const override;
  // Seeks the text reader while the pass parses text (FailedPrecondition
  // while it comes from the cache). The rest of that pass is then not
  // kept: the next pass builds the cache from the whole share.
  absl::Status SeekToOffset(int64_t offset) override;

  // Where the current pass's examples come from.
  Source source() const { return source_; }
  // Examples parsed from text so far, over all passes (0 when every pass
  // came from an existing cache file).
  int64_t text_examples() const { return text_examples_; }
  // The cache file's path (empty when the key could not be made).
  const std::string& cache_path() const { return path_; }

 private:
  CachingReader(const ReaderOptions& options, std::unique_ptr<Reader> text);

  // Opens or prepares to build the cache (at open).
  void Init();
  // Verifies the cache file and, when it fits, loads it into memory.
  absl::Status UseFile(std::unique_ptr<CacheFileReader> file);
  absl::StatusOr<bool> NextFromText(int max_examples, Batch* batch);
  absl::StatusOr<bool> NextFromCache(int max_examples, Batch* batch);
  // Adds a batch of the pass being built to the cache.
  void Keep(const Batch& batch);
  // Moves the blocks in memory to a new cache file.
  absl::Status Spill();
  void FinishBuild();
  // Stops building and discards what was kept; later passes parse text.
  void GiveUp();
  void DiscardBuild();
  // Copies a block into memory_ / drops every block in memory.
  absl::Status KeepInMemory(absl::string_view block);
  void ClearMemory();
  // Starts a pass from the finished cache.
  void StartReplay();

  const ReaderOptions options_;
  std::unique_ptr<Reader> text_;
  std::string key_;
  std::string path_;

  Source source_ = Source::kText;
  bool building_ = false;                   // this text pass keeps its examples
  bool build_next_pass_ = false;            // a seek paused building
  bool complete_ = false;                   // the cache holds the whole share
  internal::BlockArena arena_;              // holds memory_'s bytes
  std::vector<absl::string_view> memory_;   // encoded blocks in arena_
  std::vector<internal::BlockView> views_;  // of memory_, once complete
  int64_t memory_bytes_ = 0;
  std::string scratch_;  // the block being encoded (capacity reused)
  std::unique_ptr<CacheFileWriter> writer_;
  std::unique_ptr<CacheFileReader> file_;
  int64_t cached_malformed_ = 0;  // malformed lines of the building pass

  // Replay position.
  size_t next_block_ = 0;
  internal::BlockView block_;
  std::string block_buffer_;
  size_t block_pos_ = 0;

  int64_t replay_malformed_ = 0;  // added by passes from the cache
  int64_t text_examples_ = 0;
  int64_t pass_examples_ = 0;         // of the current text pass
  int64_t pass_malformed_start_ = 0;  // text_'s count when it began
};

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CACHING_READER_H_

// Training-data readers: the Reader interface and the factory that opens
// one worker's share of a list of text files.
//
// Sharding: the files are viewed as one concatenated byte stream of T bytes
// (sizes taken when the reader is opened). Worker r of n owns the byte range
// [T*r/n, T*(r+1)/n) and reads every line that starts in it, so each line is
// read by exactly one worker and one big file can feed many workers. A line
// never spans two files; a last line without '\n' counts.
//
// Formats (a blank line, or in libsvm a line that is only a comment, is
// skipped silently and not counted as malformed):
//   libsvm: `label idx:val idx:val ... [# comment]`, label 0/1 or -1/+1
//           (-1 -> 0), `qid:N` ignored, keys = idx (uint64), values finite.
//   Criteo: TSV `label \t I1..I13 \t C1..C26`; empty fields are missing (no
//           feature); integer field i -> key CriteoIntegerKey(i, v) value 1,
//           categorical field j -> key HashFeature(13 + j, text) value 1
//           (see worker/data/feature_hash.h).
//
// Optional batch parts (worker/data/batch.h), off by default:
//   with_fields:  Batch::fields gets each position's field number. Criteo:
//                 0..12 for integer columns I1..I13, 13..38 for categorical
//                 columns C1..C26. libsvm: 0 for every feature.
//   with_numeric: Batch::numeric gets each example's dense features. Criteo:
//                 num_numeric = 13, feature i = log1p(max(v, 0)) of integer
//                 column I(i+1) with value v (computed in double, stored as
//                 float; a missing column gives 0). libsvm: none
//                 (num_numeric = 0).
#ifndef PETREL_WORKER_DATA_READER_H_
#define PETREL_WORKER_DATA_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "job/crosses_config.h"
#include "worker/data/batch.h"
#include "worker/data/holdout.h"

namespace petrel {

enum class DataFormat { kLibsvm, kCriteo };

// Where parsed examples are kept after the first pass over a share, so that
// later epochs (and, with a cache file, later runs) skip text parsing. See
// worker/data/caching_reader.h and docs/configuration.md.
enum class CacheMode {
  kOff,     // parse the text on every pass
  kAuto,    // a valid cache file if one exists; else memory when the share
            // fits in memory_budget_bytes, else a cache file
  kMemory,  // memory only; over the budget, parse the text every pass
  kFile,    // a cache file, also reused by later runs; nothing in memory
};

struct CacheOptions {
  CacheMode mode = CacheMode::kOff;  // default off
  // Most bytes of parsed examples kept in memory. Default 1 GiB; >= 0.
  int64_t memory_budget_bytes = int64_t{1} << 30;
  // Directory of cache files. Default empty: the first input file's.
  std::string dir;
};

struct ReaderOptions {
  DataFormat format = DataFormat::kLibsvm;  // default libsvm
  std::vector<std::string> files;           // required, at least one
  int worker_rank = 0;                      // default 0; 0 <= rank < workers
  int num_workers = 1;                      // default 1; >= 1
  // Default false: a malformed line is an error. When true it is skipped,
  // counted in malformed_lines() and logged (the first few only).
  bool skip_malformed = false;
  // Size of the read buffer; grows for longer lines. Default 1 MiB; >= 16.
  size_t read_buffer_bytes = 1 << 20;
  // Default false: fill Batch::fields (see "Optional batch parts" above).
  bool with_fields = false;
  // Default false: fill Batch::numeric and num_numeric (see above).
  bool with_numeric = false;
  // Largest accepted |value| of a feature (libsvm values; Criteo values
  // are 1 and its numeric features log1p of an int64, at most 44). Default
  // 1e9: a batch's summed gradient squared (at most about (1024 * 1e9)^2 =
  // 1e24) can be added to the optimizers' float state for 1e14 steps before
  // it overflows; > 0. A larger value is malformed (an error
  // naming FILE:LINE, or skipped with skip_malformed) or, with
  // clip_out_of_range, becomes +-max_abs_value.
  float max_abs_value = 1e9f;
  bool clip_out_of_range = false;  // default false
  // Default off: no cache (see CacheOptions).
  CacheOptions cache;
  // Default: every example. With a split, only the training part or only
  // the held-out part (worker/data/holdout.h).
  HoldoutOptions holdout;
  // Default none: the crossed features of these field pairs are appended
  // to every example (worker/data/cross_features.h), their fields numbered from
  // cross_base_fields (Criteo: 39). The inner reader then fills fields.
  std::vector<CrossPair> crosses;
  int cross_base_fields = 0;
};

// Reads one worker's share of the examples, in file order.
// Thread safety: not thread-safe; use one Reader per thread.
class Reader {
 public:
  Reader() = default;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  virtual ~Reader();

  // Clears *batch and reads up to max_examples (>= 1) examples into it.
  // Returns true when *batch holds at least one example, false (with *batch
  // empty) at the end of this worker's share. Errors: InvalidArgument
  // "FILE:LINE: what is wrong" for a malformed line when not skipping;
  // DataLoss when a file is unreadable or shorter than when it was opened.
  // After an error the batch contents are unspecified.
  virtual absl::StatusOr<bool> Next(int max_examples, Batch* batch) = 0;

  // Starts this worker's share again from its first line (next epoch).
  // Keeps the malformed-line count.
  virtual absl::Status Rewind() = 0;

  // Malformed lines skipped so far (0 unless skip_malformed).
  virtual int64_t malformed_lines() const = 0;

  // Where the next example comes from, as a byte offset in the concatenated
  // files: reading resumes at the share's first line starting at or after
  // it (ShardedLineReader::next_offset). -1 when not known: the pass is
  // served from the parsed-example cache, or the reader reads no text.
  virtual int64_t next_offset() const { return -1; }
  // How much of the current pass over the share was read, in [0, 1], by
  // bytes; -1 when not known (a pass served from the parsed-example
  // cache). For progress lines.
  virtual double fraction_read() const { return -1; }

  // Positions the current pass at `offset`, a next_offset() of a reader
  // over the same files, options and share (ShardedLineReader::Seek), so
  // that the next examples are the ones that reader would have read next.
  // FailedPrecondition when this reader cannot (its pass is served from the
  // parsed-example cache; the default); InvalidArgument for an offset
  // outside the share or not at a line start. Rewind starts the share from
  // its beginning again.
  virtual absl::Status SeekToOffset(int64_t offset);
};

// Opens `options.worker_rank`'s share of `options.files`, behind the
// parsed-example cache that options.cache asks for. Returns
// InvalidArgument for bad options (no files, rank out of range), NotFound
// for a missing file, DataLoss for a file that cannot be read.
absl::StatusOr<std::unique_ptr<Reader>> OpenReader(
    const ReaderOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_READER_H_

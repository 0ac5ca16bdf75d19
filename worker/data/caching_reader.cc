#include "worker/data/caching_reader.h"

#include <algorithm>
#include <utility>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "worker/data/cache_key.h"

namespace petrel {
namespace {

std::string MiB(int64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CachingReader>> CachingReader::Open(
    const ReaderOptions& options, std::unique_ptr<Reader> text) {
  if (options.cache.mode == CacheMode::kOff) {
    return absl::InvalidArgumentError("cache mode is off");
  }
  if (options.cache.memory_budget_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache memory budget of ",
                     options.cache.memory_budget_bytes, " bytes is negative"));
  }
  std::unique_ptr<CachingReader> reader(
      new CachingReader(options, std::move(text)));
  reader->Init();
  return reader;
}

CachingReader::CachingReader(const ReaderOptions& options,
                             std::unique_ptr<Reader> text)
    : options_(options), text_(std::move(text)) {}

int64_t CachingReader::malformed_lines() const {
  return text_->malformed_lines() + replay_malformed_;
}

int64_t CachingReader::next_offset() const {
  return source_ == Source::kText ? text_->next_offset() : -1;
}

double CachingReader::fraction_read() const {
  return source_ == Source::kText ? text_->fraction_read() : -1;
}

absl::Status CachingReader::SeekToOffset(int64_t offset) {
  if (source_ != Source::kText) {
    return absl::FailedPreconditionError(
        "the pass is served from the parsed-example cache, by example count");
  }
  PETREL_RETURN_IF_ERROR(text_->SeekToOffset(offset));
  if (building_) {
    // Only a whole pass is a cache.
    DiscardBuild();
    building_ = false;
    build_next_pass_ = true;
  }
  return absl::OkStatus();
}

void CachingReader::Init() {
  absl::StatusOr<CacheKey> key = MakeCacheKey(options_);
  if (!key.ok()) {
    LOG(WARNING) << "parsed-example cache off: " << key.status().message();
    return;
  }
  key_ = std::move(key->key);
  path_ = std::move(key->path);
  building_ = true;
  if (options_.cache.mode == CacheMode::kMemory) return;
  absl::StatusOr<std::unique_ptr<CacheFileReader>> file =
      CacheFileReader::Open(path_, key_);
  absl::Status status = file.status();
  if (status.ok()) status = UseFile(std::move(*file));
  if (status.ok()) return;
  ClearMemory();
  // A stale or broken file would be reported again by every later run.
  if (!absl::IsNotFound(status)) unlink(path_.c_str());
  if (absl::IsNotFound(status)) {
    LOG(INFO) << "parsed-example cache: none yet at " << path_
              << "; the first pass parses the text";
  } else if (absl::IsFailedPrecondition(status)) {
    LOG(INFO) << "parsed-example cache is stale (" << status.message()
              << "); rebuilding it from the text";
  } else {
    LOG(WARNING) << "parsed-example cache unusable (" << status.message()
                 << "); rebuilding it from the text";
  }
}

absl::Status CachingReader::UseFile(std::unique_ptr<CacheFileReader> file) {
  const bool load = options_.cache.mode == CacheMode::kAuto &&
                    static_cast<int64_t>(file->data_bytes()) <=
                        options_.cache.memory_budget_bytes;
  // Check every block's checksum before any example is handed out.
  internal::BlockView view;
  uint64_t examples = 0;
  while (true) {
    absl::StatusOr<bool> more = file->NextBlock(&scratch_, &view);
    if (!more.ok()) return more.status();
    if (!*more) break;
    examples += view.examples;
    if (load) PETREL_RETURN_IF_ERROR(KeepInMemory(scratch_));
  }
  if (examples != file->examples()) {
    return absl::DataLossError(absl::StrCat(file->path(), " holds ", examples,
                                            " examples, its header says ",
                                            file->examples()));
  }
  cached_malformed_ = static_cast<int64_t>(file->malformed_lines());
  replay_malformed_ += cached_malformed_;
  LOG(INFO) << "parsed-example cache: using " << path_ << " ("
            << file->examples() << " examples, " << MiB(file->data_bytes())
            << (load ? ", loaded into memory)" : ", read from the file)");
  if (!load) file_ = std::move(file);
  building_ = false;
  complete_ = true;
  StartReplay();
  return absl::OkStatus();
}

absl::StatusOr<bool> CachingReader::Next(int max_examples, Batch* batch) {
  if (source_ == Source::kText) return NextFromText(max_examples, batch);
  return NextFromCache(max_examples, batch);
}

absl::StatusOr<bool> CachingReader::NextFromText(int max_examples,
                                                 Batch* batch) {
  absl::StatusOr<bool> more = text_->Next(max_examples, batch);
  if (!more.ok()) return more;
  text_examples_ += static_cast<int64_t>(batch->size());
  if (!building_) return more;
  if (*more) {
    pass_examples_ += static_cast<int64_t>(batch->size());
    Keep(*batch);
  } else {
    FinishBuild();
  }
  return more;
}

absl::Status CachingReader::KeepInMemory(absl::string_view block) {
  PETREL_ASSIGN_OR_RETURN(absl::string_view copy, arena_.Append(block));
  memory_.push_back(copy);
  memory_bytes_ += static_cast<int64_t>(block.size());
  return absl::OkStatus();
}

void CachingReader::ClearMemory() {
  memory_.clear();
  memory_.shrink_to_fit();
  views_.clear();
  arena_.Clear();
  memory_bytes_ = 0;
}

void CachingReader::Keep(const Batch& batch) {
  scratch_.clear();
  internal::EncodeBlock(batch, &scratch_);
  const absl::string_view block = scratch_;
  if (writer_ == nullptr && options_.cache.mode != CacheMode::kFile &&
      memory_bytes_ + static_cast<int64_t>(block.size()) <=
          options_.cache.memory_budget_bytes) {
    absl::Status status = KeepInMemory(block);
    if (!status.ok()) {
      LOG(WARNING) << "parsed-example cache: " << status.message()
                   << "; every pass parses the text";
      GiveUp();
    }
    return;
  }
  if (options_.cache.mode == CacheMode::kMemory) {
    LOG(INFO) << "parsed-example cache: the share's examples exceed the "
                 "memory budget of "
              << MiB(options_.cache.memory_budget_bytes)
              << "; every pass parses the text";
    GiveUp();
    return;
  }
  absl::Status status = writer_ == nullptr ? Spill() : absl::OkStatus();
  if (status.ok()) status = writer_->Append(block, batch.size());
  if (!status.ok()) {
    LOG(WARNING) << "parsed-example cache: cannot write it ("
                 << status.message()
                 << "); set data.cache.dir to a writable directory with room. "
                    "Every pass parses the text.";
    GiveUp();
  }
}

absl::Status CachingReader::Spill() {
  absl::StatusOr<std::unique_ptr<CacheFileWriter>> writer =
      CacheFileWriter::Create(path_, key_);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(*writer);
  for (absl::string_view block : memory_) {
    absl::StatusOr<internal::BlockView> view = internal::ParseBlock(block);
    if (!view.ok()) return view.status();  // our own bytes: cannot happen
    absl::Status status = writer_->Append(block, view->examples);
    if (!status.ok()) return status;
  }
  ClearMemory();
  return absl::OkStatus();
}

void CachingReader::FinishBuild() {
  building_ = false;
  cached_malformed_ = text_->malformed_lines() - pass_malformed_start_;
  if (writer_ == nullptr) {
    complete_ = true;
    LOG(INFO) << "parsed-example cache: kept " << pass_examples_
              << " examples (" << MiB(memory_bytes_)
              << ") in memory for later passes";
    return;
  }
  const uint64_t bytes = writer_->data_bytes();
  absl::Status status = writer_->Finish(cached_malformed_);
  writer_.reset();
  absl::StatusOr<std::unique_ptr<CacheFileReader>> file =
      status.ok() ? CacheFileReader::Open(path_, key_)
                  : absl::StatusOr<std::unique_ptr<CacheFileReader>>(status);
  if (!file.ok()) {
    LOG(WARNING) << "parsed-example cache: cannot finish " << path_ << " ("
                 << file.status().message() << "); every pass parses the text";
    GiveUp();
    return;
  }
  file_ = std::move(*file);
  complete_ = true;
  LOG(INFO) << "parsed-example cache: wrote " << path_ << " (" << MiB(bytes)
            << ") for later passes and runs";
}

void CachingReader::DiscardBuild() {
  writer_.reset();  // removes its temporary file
  ClearMemory();
}

void CachingReader::GiveUp() {
  DiscardBuild();
  building_ = false;
}

void CachingReader::StartReplay() {
  if (file_ != nullptr) {
    file_->Rewind();
    source_ = Source::kFile;
  } else {
    if (views_.size() != memory_.size()) {
      views_.clear();
      for (absl::string_view block : memory_) {
        // Blocks in memory were checked (or encoded) here; a failure is a
        // bug in this process.
        absl::StatusOr<internal::BlockView> view = internal::ParseBlock(block);
        CHECK(view.ok()) << view.status();
        views_.push_back(*view);
      }
    }
    source_ = Source::kMemory;
  }
  next_block_ = 0;
  block_ = internal::BlockView();
  block_pos_ = 0;
}

absl::StatusOr<bool> CachingReader::NextFromCache(int max_examples,
                                                  Batch* batch) {
  batch->Clear();
  if (max_examples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_examples ", max_examples, " is below 1"));
  }
  const size_t want = static_cast<size_t>(max_examples);
  while (batch->size() < want) {
    if (block_pos_ == block_.examples) {
      if (source_ == Source::kFile) {
        absl::StatusOr<bool> more = file_->NextBlock(&block_buffer_, &block_);
        if (!more.ok()) return more.status();
        if (!*more) break;
      } else {
        if (next_block_ == views_.size()) break;
        block_ = views_[next_block_++];
      }
      block_pos_ = 0;
      continue;
    }
    const size_t take =
        std::min<size_t>(block_.examples - block_pos_, want - batch->size());
    internal::AppendExamples(block_, block_pos_, block_pos_ + take, batch);
    block_pos_ += take;
  }
  return batch->size() > 0;
}

absl::Status CachingReader::Rewind() {
  if (complete_) {
    replay_malformed_ += cached_malformed_;
    StartReplay();
    return absl::OkStatus();
  }
  if (building_) DiscardBuild();  // a partial pass is no cache
  if (build_next_pass_) {
    building_ = true;
    build_next_pass_ = false;
  }
  pass_examples_ = 0;
  pass_malformed_start_ = text_->malformed_lines();
  return text_->Rewind();
}

}  // namespace petrel

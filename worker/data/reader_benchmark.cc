// Reader throughput on text shaped like the training data, in MB/s of text
// (bytes_per_second) on one core:
//   BM_ReadFile/0: libsvm, 15 features per line (`idx:1`, a few decimals),
//                  indices up to 2^24, through OpenReader from a file in the
//                  page cache (line splitting + parsing + batch building).
//   BM_ReadFile/1: Criteo TSV, 13 integer + 26 hex categorical fields, some
//                  empty, the same way.
//   BM_ParseLine/0, /1: the line parsers alone over lines in memory.
//   BM_ReadCached/0, /1: a later epoch served from the parsed-example cache
//                  (in memory), in MB/s of the text it replaces.
//   BM_ReadDataFile/0, /1: like BM_ReadFile, on the libsvm / Criteo file
//                  named by $READER_BENCHMARK_LIBSVM / $READER_BENCHMARK_CRITEO
//                  (e.g. petrel-datagen output); skipped when unset.
// Run (medians of 5 repetitions):
//   build/worker/data/reader_benchmark --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "glog/logging.h"

#include "worker/data/criteo_reader.h"
#include "worker/data/libsvm_reader.h"
#include "worker/data/reader.h"

namespace petrel {
namespace {

constexpr int kLines = 100000;

std::string LibsvmText() {
  std::mt19937_64 rng(1);
  std::string text;
  for (int i = 0; i < kLines; ++i) {
    absl::StrAppend(&text, rng() % 4 == 0 ? "1" : "0");
    for (int f = 0; f < 15; ++f) {
      const uint64_t index = rng() % (uint64_t{1} << 24) + 1;
      if (rng() % 10 == 0) {
        absl::StrAppendFormat(&text, " %d:%.4f", index, (rng() % 10000) / 1e4);
      } else {
        absl::StrAppend(&text, " ", index, ":1");
      }
    }
    text += '\n';
  }
  return text;
}

std::string CriteoText() {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> count(1.5, 2.0);
  std::string text;
  for (int i = 0; i < kLines; ++i) {
    absl::StrAppend(&text, rng() % 4 == 0 ? "1" : "0");
    for (int f = 0; f < 13; ++f) {
      text += '\t';
      if (rng() % 5 == 0) continue;  // missing
      absl::StrAppend(&text, static_cast<int64_t>(count(rng)));
    }
    for (int f = 0; f < 26; ++f) {
      text += '\t';
      if (rng() % 8 == 0) continue;
      absl::StrAppendFormat(&text, "%08x", static_cast<uint32_t>(rng()));
    }
    text += '\n';
  }
  return text;
}

const std::string& Text(int format) {
  static const std::string* libsvm = new std::string(LibsvmText());
  static const std::string* criteo = new std::string(CriteoText());
  return format == 0 ? *libsvm : *criteo;
}

std::string WriteFile(int format) {
  const std::string path =
      absl::StrFormat("/tmp/petrel_reader_benchmark_%d_%d.txt",
                      static_cast<int>(getpid()), format);
  FILE* f = std::fopen(path.c_str(), "wb");
  CHECK(f != nullptr) << path;
  const std::string& text = Text(format);
  CHECK_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
  CHECK_EQ(std::fclose(f), 0);
  return path;
}

ReaderOptions Options(int format, const std::string& path) {
  ReaderOptions options;
  options.format = format == 0 ? DataFormat::kLibsvm : DataFormat::kCriteo;
  options.files = {path};
  return options;
}

void BM_ReadFile(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const std::string path = WriteFile(format);
  ReaderOptions options = Options(format, path);
  options.cache.mode = CacheMode::kOff;
  auto reader = OpenReader(options);
  CHECK(reader.ok()) << reader.status();
  Batch batch;
  int64_t examples = 0;
  for (auto _ : state) {
    CHECK((*reader)->Rewind().ok());
    while (*(*reader)->Next(1024, &batch)) examples += batch.size();
  }
  CHECK_EQ(examples, int64_t{kLines} * state.iterations());
  state.SetBytesProcessed(state.iterations() * Text(format).size());
  state.SetItemsProcessed(examples);
  std::remove(path.c_str());
}
BENCHMARK(BM_ReadFile)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ReadDataFile(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const char* path = std::getenv(format == 0 ? "READER_BENCHMARK_LIBSVM"
                                             : "READER_BENCHMARK_CRITEO");
  if (path == nullptr) {
    state.SkipWithError("no data file set");
    return;
  }
  ReaderOptions options = Options(format, path);
  options.cache.mode = CacheMode::kOff;
  auto reader = OpenReader(options);
  CHECK(reader.ok()) << reader.status();
  Batch batch;
  uint64_t digest = 0;  // of the keys: equal output gives equal digests
  for (auto _ : state) {
    CHECK((*reader)->Rewind().ok());
    digest = 0;
    while (*(*reader)->Next(1024, &batch)) {
      for (uint64_t key : batch.keys) digest = digest * 31 + key;
    }
  }
  state.counters["digest"] = static_cast<double>(digest % (1 << 30));
  struct stat st;
  CHECK_EQ(stat(path, &st), 0);
  state.SetBytesProcessed(state.iterations() * st.st_size);
}
BENCHMARK(BM_ReadDataFile)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The first pass with a memory cache being built (a new reader each time).
void BM_ReadAndKeep(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const std::string path = WriteFile(format);
  ReaderOptions options = Options(format, path);
  options.cache.mode = CacheMode::kMemory;
  Batch batch;
  for (auto _ : state) {
    auto reader = OpenReader(options);
    CHECK(reader.ok()) << reader.status();
    while (*(*reader)->Next(1024, &batch)) {
    }
  }
  state.SetBytesProcessed(state.iterations() * Text(format).size());
  std::remove(path.c_str());
}
BENCHMARK(BM_ReadAndKeep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ReadCached(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const std::string path = WriteFile(format);
  ReaderOptions options = Options(format, path);
  options.cache.mode = CacheMode::kMemory;
  auto reader = OpenReader(options);
  CHECK(reader.ok()) << reader.status();
  Batch batch;
  while (*(*reader)->Next(1024, &batch)) {
  }
  int64_t examples = 0;
  for (auto _ : state) {
    CHECK((*reader)->Rewind().ok());
    while (*(*reader)->Next(1024, &batch)) examples += batch.size();
  }
  CHECK_EQ(examples, int64_t{kLines} * state.iterations());
  state.SetBytesProcessed(state.iterations() * Text(format).size());
  state.SetItemsProcessed(examples);
  std::remove(path.c_str());
}
BENCHMARK(BM_ReadCached)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ParseLine(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const std::string& text = Text(format);
  std::vector<absl::string_view> lines;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find('\n', begin);
    lines.push_back(absl::string_view(text).substr(begin, end - begin));
    begin = end + 1;
  }
  const ReaderOptions options;
  Batch batch;
  for (auto _ : state) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i % 1024 == 0) batch.Clear();
      absl::StatusOr<bool> ok =
          format == 0 ? ParseLibsvmLine(lines[i], options, &batch)
                      : ParseCriteoLine(lines[i], options, &batch);
      benchmark::DoNotOptimize(ok);
    }
  }
  state.SetBytesProcessed(state.iterations() * text.size());
  state.SetItemsProcessed(state.iterations() * lines.size());
}
BENCHMARK(BM_ParseLine)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace petrel

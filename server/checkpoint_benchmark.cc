// Checkpoint write and load speed of one server (TableServer::SaveCheckpoint
// and LoadCheckpoint) for a 10^7-row sparse table, on /tmp:
//   BM_SaveCheckpoint  the table file (4 MiB direct writes, fsync, rename)
//                      and a manifest, into a fresh checkpoint directory
//   BM_LoadCheckpoint  a new server loading that checkpoint: the file's
//                      checksum pass, then its rows into the table (both
//                      passes direct reads from the device: the file was
//                      written past the page cache)
// Arg: 16 = dim 16 with Adagrad (stride 32, 136-byte rows, 1.36 GB);
//       8 = dim 8 with Adagrad (stride 16, 72-byte rows, 720 MB);
//       1 = dim 1 with FTRL (stride 3: weight, z, n; 20-byte rows, 200 MB).
// bytes_per_second is table-file bytes per wall-clock second;
// all_threads_cpu_s is the CPU time of every thread of the process during
// the save or load (the wall time on a busy machine says more about the
// other processes than about this code). Run:
//   build/server/checkpoint_benchmark --benchmark_repetitions=3
//     --benchmark_filter='Checkpoint/(16|1)/'
// It needs ~5 GB of memory and ~1.5 GB under /tmp.
//
// On the 2-core dev VM while other helpers built and tested (load average
// 3.4-8), medians of 3 (2026-12-04, after the bulk SetRows, direct I/O and
// read-ahead changes):
//   save  dim 16: 1.44 s for 10^7 rows, 904 MB/s, 0.55 s CPU
//         dim 1:  0.40 s, 477 MB/s, 0.27 s CPU
//   load  dim 16: 3.22 s, 402 MB/s, 2.29 s CPU (all threads)
//         dim 1:  0.65 s, 292 MB/s, 0.53 s CPU (all threads)
// Before those changes, in the same conditions: dim 1 loads took 0.94-1.3 s
// (145-200 MB/s; 65 ns per row in SetRows alone); with buffered writes, a
// dim 16 save took 10.2 s (127 MB/s: 4 s of CPU copying into fresh
// page-cache pages, which this VM makes slow). Buffered reads of a cold
// file run at ~120 MB/s here, direct ones at 1.5-1.7 GB/s (dd).
// Before rows were saved in creation order (they were in the index's hash
// order), the load of 10^7 rows took 340 s: see Table::ForEachStoredRow.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "benchmark/benchmark.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "server/table_server.h"

namespace petrel {
namespace {

constexpr uint64_t kRows = 10'000'000;

pb::JobConfig Job(int dim) {
  pb::JobConfig job;
  const std::string text =
      dim == 1
          ? "tables { id: 0 optimizer { kind: KIND_FTRL } }"
          : "tables { id: 0 }\n"
            "tables { id: 1 dim: " +
                std::to_string(dim) + " optimizer { kind: KIND_ADAGRAD } }";
  CHECK(ParseTextProto(text, "job", &job).ok());
  return job;
}

int BigTable(int dim) { return dim == 1 ? 0 : 1; }

std::unique_ptr<TableServer> NewServer(int dim) {
  // Default options: as many threads as cores.
  auto server = TableServer::Create(Job(dim), 1, nullptr);
  CHECK(server.ok()) << server.status();
  return *std::move(server);
}

// A server whose big table holds kRows random keys.
std::unique_ptr<TableServer> FilledServer(int dim) {
  std::unique_ptr<TableServer> server = NewServer(dim);
  Table* table = server->mutable_table(BigTable(dim));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint64_t> keys;
  std::vector<float> values;
  for (uint64_t done = 0; done < kRows; done += keys.size()) {
    keys.resize(std::min<uint64_t>(kChunk, kRows - done));
    values.resize(keys.size() * table->stride());
    for (uint64_t& k : keys) k = rng();
    for (float& v : values) v = value(rng);
    CHECK(table->SetRows(keys, values, table->stride(), true).ok());
  }
  return server;
}

// CPU seconds of every thread of this process so far.
double ProcessCpuSeconds() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

std::string Root() {
  return "/tmp/petrel_checkpoint_benchmark." + std::to_string(::getpid());
}

// Saves `server` as checkpoint `id` under Root(); returns its directory and
// adds the table files' bytes to `*bytes`.
std::string Save(const TableServer& server, const KeyRangeMap& ranges,
                 uint64_t id, uint64_t* bytes) {
  auto dir = CreateCheckpointDir(Root(), id);
  CHECK(dir.ok()) << dir.status();
  auto files = server.SaveCheckpoint(*dir, ranges, 0);
  CHECK(files.ok()) << files.status();
  pb::CheckpointManifest manifest;
  manifest.set_format_version(kCheckpointFormatVersion);
  manifest.set_id(id);
  manifest.set_num_servers(1);
  for (const auto& t : server.CheckpointTables()) *manifest.add_tables() = t;
  for (const auto& f : *files) {
    *manifest.add_files() = f;
    *bytes += f.bytes();
  }
  CHECK(WriteManifest(*dir, manifest).ok());
  return *dir;
}

void BM_SaveCheckpoint(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  std::unique_ptr<TableServer> server = FilledServer(dim);
  const KeyRangeMap ranges = *KeyRangeMap::Uniform(1, 32);
  uint64_t id = 0;
  uint64_t bytes = 0;
  double cpu = 0;
  for (auto _ : state) {
    const double cpu_start = ProcessCpuSeconds();
    Save(*server, ranges, ++id, &bytes);
    cpu += ProcessCpuSeconds() - cpu_start;
    state.PauseTiming();
    CHECK(RetainCheckpoints(Root(), 1).ok());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["rows"] = static_cast<double>(kRows);
  state.counters["all_threads_cpu_s"] =
      benchmark::Counter(cpu, benchmark::Counter::kAvgIterations);
  std::filesystem::remove_all(Root());
}

void BM_LoadCheckpoint(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const KeyRangeMap ranges = *KeyRangeMap::Uniform(1, 32);
  uint64_t file_bytes = 0;
  std::string dir;
  {
    std::unique_ptr<TableServer> source = FilledServer(dim);
    dir = Save(*source, ranges, 1, &file_bytes);
  }
  const pb::CheckpointManifest manifest = *ReadManifest(dir);
  uint64_t bytes = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<TableServer> server = NewServer(dim);
    state.ResumeTiming();
    const double cpu_start = ProcessCpuSeconds();
    CHECK(server->LoadCheckpoint(dir, manifest, ranges, 0, true).ok());
    cpu += ProcessCpuSeconds() - cpu_start;
    bytes += file_bytes;
    state.PauseTiming();
    CHECK_EQ(server->table(BigTable(dim))->num_rows(), kRows);
    server.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["rows"] = static_cast<double>(kRows);
  state.counters["all_threads_cpu_s"] =
      benchmark::Counter(cpu, benchmark::Counter::kAvgIterations);
  std::filesystem::remove_all(Root());
}

BENCHMARK(BM_SaveCheckpoint)
    ->Arg(16)
    ->Arg(8)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LoadCheckpoint)
    ->Arg(16)
    ->Arg(8)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace petrel

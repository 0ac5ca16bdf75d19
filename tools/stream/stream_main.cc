// petrel-stream: streams Zipf keys through a table of a training job, as a
// worker of it, to measure what the servers' memory does under a stream of
// distinct keys (docs/memory.md). Each batch is --draws_per_batch Zipf draws
// over --key_space ranks (tools/stream/zipf_key_stream.h), deduplicated,
// sent as one push-and-pull of --dim gradients per key (0.01 each) to
// table --table; --inflight batches stay outstanding. It stops once
// --distinct_keys distinct keys were sent (or after --max_seconds), then
// finishes the job. Progress lines every --report_every_s and a final line
//
//   stream draws=148500000 distinct=100000000 batches=9064 seconds=300.1
//   keys_per_s=331000
//
// go to stdout. The servers run petrel-server --config=JOB (a job whose
// table --table is sparse with dim --dim), e.g. with --memory_cap_mib.
//
// Exit status: 0 when the stream and the job's end succeeded, 1 when a
// request failed, 2 for bad flags.
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "cluster/postoffice.h"
#include "kv/kv_worker.h"
#include "node/node_flags.h"
#include "node/node_runtime.h"
#include "roles/built_in_roles.h"
#include "tools/stream/zipf_key_stream.h"

DEFINE_int32(table, 0, "The table the keys go to. Default 0.");
DEFINE_int32(dim, 1, "The table's dim: values per key. Default 1; 1..65536.");
DEFINE_int64(draws_per_batch, 16384,
             "Zipf draws per batch (deduplicated before sending). Default "
             "16384; 1..2^24.");
DEFINE_int64(key_space, int64_t{1} << 31,
             "Ranks the Zipf draws come from (1..key_space). Default 2^31; "
             "1..2^36 (the bitmap counting distinct keys takes key_space / "
             "8 bytes).");
DEFINE_double(zipf_exponent, 0.8, "The Zipf exponent. Default 0.8.");
DEFINE_uint64(seed, 1, "Seed of the draws. Default 1.");
DEFINE_int64(distinct_keys, 1000000,
             "Stop once this many distinct keys were sent. Default 10^6.");
DEFINE_double(max_seconds, 0,
              "Stop after this many seconds whatever the keys; 0: no limit. "
              "Default 0.");
DEFINE_int32(inflight, 2, "Batches outstanding. Default 2; 1..64.");
DEFINE_int32(wait_timeout_s, 60,
             "Longest wait for one request or the job's end, in seconds. "
             "Default 60.");
DEFINE_double(report_every_s, 5, "Seconds between progress lines. Default 5.");

namespace petrel {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadFlags = 2;

struct InFlight {
  int ts = 0;
  SArray<Key> keys;
  SArray<float> grads;
  SArray<float> outs;
};

absl::Status CheckFlags() {
  absl::Status s = CheckFlagRange("dim", FLAGS_dim, 1, 65536);
  if (s.ok()) s = CheckFlagRange("inflight", FLAGS_inflight, 1, 64);
  if (s.ok())
    s = CheckFlagRange("wait_timeout_s", FLAGS_wait_timeout_s, 1, 86400);
  if (s.ok() && FLAGS_distinct_keys < 1) {
    s = absl::InvalidArgumentError("--distinct_keys: must be >= 1");
  }
  if (s.ok() && !(FLAGS_max_seconds >= 0)) {
    s = absl::InvalidArgumentError("--max_seconds: must be >= 0");
  }
  return s;
}

std::string Line(const char* what, const ZipfKeyStream& stream, int64_t batches,
                 double seconds) {
  return absl::StrCat(
      what, " draws=", stream.draws(), " distinct=", stream.distinct(),
      " batches=", batches, " seconds=", absl::StrFormat("%.1f", seconds),
      " keys_per_s=",
      static_cast<int64_t>(seconds > 0 ? stream.draws() / seconds : 0));
}

int Run() {
  ZipfKeyStreamOptions o;
  o.key_space = FLAGS_key_space;
  o.exponent = FLAGS_zipf_exponent;
  o.seed = FLAGS_seed;
  o.draws_per_batch = FLAGS_draws_per_batch;
  absl::Status flags = CheckFlags();
  absl::StatusOr<std::unique_ptr<ZipfKeyStream>> stream =
      flags.ok() ? ZipfKeyStream::Create(o)
                 : absl::StatusOr<std::unique_ptr<ZipfKeyStream>>(flags);
  absl::StatusOr<NodeSettings> settings =
      stream.ok() ? NodeSettingsFromFlags(pb::ROLE_WORKER)
                  : absl::StatusOr<NodeSettings>(stream.status());
  if (!settings.ok()) {
    std::fprintf(stderr, "petrel-stream: %s\n",
                 std::string(settings.status().message()).c_str());
    return kExitBadFlags;
  }
  const absl::Duration timeout = absl::Seconds(FLAGS_wait_timeout_s);
  NodeRuntime runtime(*settings);
  auto kv = std::make_unique<KVWorker<float>>(0, 0, runtime.postoffice());
  absl::Status s = kv->Start();
  if (s.ok()) s = runtime.Start();
  KVRequestOptions request;
  request.table_id = FLAGS_table;
  std::deque<InFlight> window;
  int64_t batches = 0;
  const absl::Time start = absl::Now();
  absl::Time next_report = start + absl::Seconds(FLAGS_report_every_s);
  auto seconds = [&] { return absl::ToDoubleSeconds(absl::Now() - start); };
  while (s.ok()) {
    const bool done =
        (*stream)->distinct() >= static_cast<uint64_t>(FLAGS_distinct_keys) ||
        (FLAGS_max_seconds > 0 && seconds() >= FLAGS_max_seconds);
    if (!done && window.size() < static_cast<size_t>(FLAGS_inflight)) {
      std::vector<uint64_t> keys = (*stream)->Next();
      // In the window before the request goes out: the answer is written
      // into its outs, which a deque does not move when it grows.
      InFlight& f = window.emplace_back();
      f.keys = SArray<Key>(keys.size());
      std::copy(keys.begin(), keys.end(), f.keys.begin());
      f.grads = SArray<float>(keys.size() * FLAGS_dim, 0.01f);
      f.ts = kv->PushPull(f.keys, f.grads, &f.outs, request);
      ++batches;
      continue;
    }
    if (window.empty()) break;
    s = kv->Wait(window.front().ts, timeout);
    // A request that failed stays in the window: a late answer may still
    // write into it until kv stops.
    if (!s.ok()) break;
    window.pop_front();
    if (absl::Now() >= next_report) {
      std::printf("%s\n",
                  Line("progress", **stream, batches, seconds()).c_str());
      std::fflush(stdout);
      next_report += absl::Seconds(FLAGS_report_every_s);
    }
  }
  if (s.ok()) {
    std::printf("%s\n", Line("stream", **stream, batches, seconds()).c_str());
    std::fflush(stdout);
    s = runtime.postoffice()->Finish(timeout);
  }
  kv.reset();
  runtime.Stop();
  if (!s.ok()) {
    std::fprintf(stderr, "petrel-stream: %s\n", s.ToString().c_str());
    return kExitFailed;
  }
  return 0;
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-stream";
  cli.usage =
      "Streams Zipf keys through a job's table as a worker (docs/memory.md).\n"
      "  petrel-stream --scheduler=HOST:PORT --table=0 --dim=1 "
      "--distinct_keys=100000000";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  if (std::optional<int> code = petrel::RunBuiltInRole(cli.name)) return *code;
  return petrel::Run();
}

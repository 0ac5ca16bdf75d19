// TableServer's side of the range copy to a replacement server
// (docs/failures.md, "Replacement servers"): the snapshot a live primary
// sends and the install on the newcomer. KVServer (kv_server_range_copy.cc)
// carries the entries and the duplicate-detection state; this file decides
// what a training server's ranges hold.
//
// The entries are KVPairs<float>, one key and lens[i] floats each, whose
// first float tells what the entry is:
//   t >= 0   a row of table t: the key, then the row's stride() floats
//            (weights, then the optimizer's state), as Table's
//            ForEachStoredBlock gives them to checkpoints and SetRows
//            takes them back;
//   -1       table `key`'s admission sketch, one float per counter;
//   -2       the workers' clocks, two floats per rank (see EncodeClock).
// Each entry stands alone, so the copy may be cut between any two.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "server/table_server.h"

namespace petrel {
namespace {

constexpr float kAdmissionTag = -1;
constexpr float kClocksTag = -2;
// A clock c >= -1 travels as c + 1 = hi * 2^24 + lo: floats hold both
// halves exactly.
constexpr int64_t kHalf = int64_t{1} << 24;

void EncodeClock(int64_t clock, std::vector<float>* out) {
  const int64_t v = clock + 1;
  out->push_back(static_cast<float>(v / kHalf));
  out->push_back(static_cast<float>(v % kHalf));
}

// Whether floats [from, to) are whole numbers in [0, hi].
bool AllWhole(const float* from, const float* to, float hi) {
  return std::all_of(from, to, [hi](float f) {
    return f >= 0 && f <= hi &&
           f == static_cast<float>(static_cast<int64_t>(f));
  });
}

int64_t DecodeClock(const float* f) {
  return static_cast<int64_t>(f[0]) * kHalf + static_cast<int64_t>(f[1]) - 1;
}

// Appends one entry to the lists the snapshot is built in.
struct EntryLists {
  std::vector<Key> keys;
  std::vector<float> vals;
  std::vector<int> lens;
  void Add(Key key, float tag, const float* data, size_t n) {
    keys.push_back(key);
    vals.push_back(tag);
    vals.insert(vals.end(), data, data + n);
    lens.push_back(static_cast<int>(n + 1));
  }
};

}  // namespace

KVPairs<float> TableServer::SnapshotRanges(
    const std::function<bool(Key)>& keep) const {
  absl::MutexLock exec(&exec_mu_);
  EntryLists out;
  std::vector<int> ids;
  for (const auto& entry : tables_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    const Table& table = *tables_.at(id);
    const size_t stride = static_cast<size_t>(table.stride());
    table.ForEachStoredBlock([&](const uint64_t* keys, const float* rows,
                                 size_t n) {
      for (size_t i = 0; i < n; ++i) {
        if (keep(keys[i])) {
          out.Add(keys[i], static_cast<float>(id), rows + i * stride, stride);
        }
      }
    });
    if (table.options().admit_after > 1) {
      const std::vector<uint16_t> counters = table.AdmissionCounters();
      const std::vector<float> f(counters.begin(), counters.end());
      out.Add(static_cast<Key>(id), kAdmissionTag, f.data(), f.size());
    }
  }
  std::vector<float> clocks;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t c : clocks_) EncodeClock(c, &clocks);
  }
  out.Add(0, kClocksTag, clocks.data(), clocks.size());
  KVPairs<float> pairs;
  pairs.keys = SArray<Key>(std::move(out.keys));
  pairs.vals = SArray<float>(std::move(out.vals));
  pairs.lens = SArray<int>(std::move(out.lens));
  return pairs;
}

absl::Status TableServer::InstallRanges(const KVPairs<float>& entries,
                                        KVServer<float>* server) {
  absl::MutexLock exec(&exec_mu_);
  const size_t n = entries.keys.size();
  if (entries.lens.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range copy: ", entries.lens.size(), " lengths for ", n, " keys"));
  }
  // Checks the layout before anything is set.
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const int len = entries.lens[i];
    if (len < 1 || total + len > entries.vals.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("range copy: entry ", i, " of ", len,
                       " floats overruns ", entries.vals.size()));
    }
    const float* entry = entries.vals.data() + total;
    const float tag = entry[0];
    bool fits = false;
    if (tag >= 0 && tag < 1e9f) {
      auto it = tables_.find(static_cast<int>(tag));
      fits = it != tables_.end() && static_cast<float>(it->first) == tag &&
             len == 1 + it->second->stride();
    } else if (tag == kAdmissionTag) {
      fits = entries.keys[i] < (Key{1} << 31) &&
             tables_.contains(static_cast<int>(entries.keys[i])) &&
             AllWhole(entry + 1, entry + len, 65535.0f);
    } else if (tag == kClocksTag) {
      fits = len == 1 + 2 * num_workers_ &&
             AllWhole(entry + 1, entry + len, static_cast<float>(kHalf));
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "range copy: entry ", i, " (key ", entries.keys[i], ", tag ", tag,
          ", ", len, " floats) does not fit this server's tables"));
    }
    total += static_cast<size_t>(len);
  }
  // Runs of rows of one table are set at once.
  std::vector<uint64_t> keys;
  std::vector<float> values;
  Table* run_table = nullptr;
  auto flush = [&]() -> absl::Status {
    if (run_table == nullptr || keys.empty()) return absl::OkStatus();
    absl::Status s = run_table->SetRows(keys, values, run_table->stride(),
                                        /*with_state=*/true, runner_);
    keys.clear();
    values.clear();
    return s;
  };
  bool clocks_changed = false;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* entry = entries.vals.data() + at;
    const size_t len = static_cast<size_t>(entries.lens[i]);
    at += len;
    const float tag = entry[0];
    if (tag >= 0) {
      Table* table = tables_.at(static_cast<int>(tag)).get();
      if (table != run_table) {
        PETREL_RETURN_IF_ERROR(flush());
        run_table = table;
      }
      keys.push_back(entries.keys[i]);
      values.insert(values.end(), entry + 1, entry + len);
      continue;
    }
    PETREL_RETURN_IF_ERROR(flush());
    if (tag == kAdmissionTag) {
      Table* table = tables_.at(static_cast<int>(entries.keys[i])).get();
      std::vector<uint16_t> merged = table->AdmissionCounters();
      if (merged.size() != len - 1) {
        LOG(WARNING) << "range copy: " << len - 1
                     << " admission counters do not fit table " << table->id()
                     << " (" << merged.size()
                     << "; admission_counters or the shard count differ); "
                        "its admission counts of the copied keys start over";
        continue;
      }
      for (size_t c = 0; c < merged.size(); ++c) {
        merged[c] = std::max(merged[c], static_cast<uint16_t>(entry[1 + c]));
      }
      PETREL_RETURN_IF_ERROR(table->SetAdmissionCounters(merged));
      continue;
    }
    // The clocks: a worker's is the larger of both; one that left stays
    // gone. min_clock_ rises without counting clocks for the TTLs: the
    // copied rows are as fresh as the source's.
    absl::MutexLock lock(&mu_);
    for (int r = 0; r < num_workers_; ++r) {
      const int64_t c = DecodeClock(entry + 1 + 2 * r);
      int64_t& mine = clocks_[r];
      if (c == -1) {
        mine = -1;
      } else if (mine != -1) {
        mine = std::max(mine, c);
      }
    }
    min_clock_ = ComputeMinClock();
    if (min_clock_gauge_ != nullptr) {
      min_clock_gauge_->Set(static_cast<double>(min_clock_));
    }
    clocks_changed = true;
  }
  PETREL_RETURN_IF_ERROR(flush());
  if (clocks_changed && server != nullptr) {
    ReleaseHeld(server, min_clock());
  }
  return absl::OkStatus();
}

void TableServer::EnableRangeCopy(KVServer<float>* server) {
  server->set_range_copy(
      [this](const std::function<bool(Key)>& keep) {
        return SnapshotRanges(keep);
      },
      [this, server](const KVPairs<float>& entries) {
        return InstallRanges(entries, server);
      });
}

}  // namespace petrel

#include "worker/data/cross_selection.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "job/criteo.h"
#include "worker/data/data_options.h"
#include "worker/data/feature_hash.h"
#include "worker/data/reader.h"

namespace petrel {
namespace {

constexpr uint64_t kSplitSeed = 0x2545f4914f6cdd1dULL;
constexpr size_t kRunnersUp = 5;

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// Logloss of logit z for label y (stable).
double LogLoss(double z, double y) {
  return std::log1p(std::exp(-std::fabs(z))) + std::max(z, 0.0) - y * z;
}

uint32_t BaseBucket(uint32_t id, uint64_t mask) {
  return static_cast<uint32_t>(Mix64(id) & mask);
}

uint32_t PairBucket(uint32_t ia, uint32_t ib, uint64_t salt, uint64_t mask) {
  return static_cast<uint32_t>(Mix64(((uint64_t{ia} << 32) | ib) ^ salt) &
                               mask);
}

std::string Describe(const std::vector<ScoredPair>& pairs) {
  return absl::StrJoin(pairs, ", ", [](std::string* out, const ScoredPair& p) {
    absl::StrAppend(out, p.pair.a, "-", p.pair.b, " (",
                    absl::SixDigits(p.gain * 100), "%, z ",
                    absl::SixDigits(p.z), ")");
  });
}

}  // namespace

void CrossSample::AddRow(const std::vector<uint32_t>& ids, float label) {
  for (int f = 0; f < num_fields_; ++f) columns_[f].push_back(ids[f]);
  labels_.push_back(label);
}

uint32_t CrossSample::IdOfKey(uint64_t key) {
  const uint32_t id = static_cast<uint32_t>(key >> 32);
  return id == kMissing ? kMissing - 1 : id;
}

void CrossSample::AddBatch(const Batch& batch, size_t max_rows) {
  std::vector<uint32_t> ids(num_fields_);
  for (size_t i = 0; i < batch.size() && rows() < max_rows; ++i) {
    std::fill(ids.begin(), ids.end(), kMissing);
    for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
      const uint32_t f = batch.fields[j];
      if (f < static_cast<uint32_t>(num_fields_) && ids[f] == kMissing) {
        ids[f] = IdOfKey(batch.keys[j]);
      }
    }
    AddRow(ids, batch.labels[i]);
  }
}

namespace {

// The sample split in two halves by a hash of the row: the fit rows first,
// then the eval rows; each field's ids and the labels in that order.
struct SplitSample {
  size_t n = 0;
  size_t fit_rows = 0;
  size_t n_eval = 0;
  std::vector<std::vector<uint32_t>> ids;  // [field][row]
  std::vector<double> y;
};

// False (and `out` without rows) when a half would be empty or the sample
// has fewer than `min_rows` rows.
bool SplitRows(const CrossSample& sample, int min_rows, SplitSample* out) {
  const size_t n = sample.rows();
  const int nf = sample.num_fields();
  out->n = n;
  std::vector<size_t> order;
  order.reserve(n);
  for (int half = 0; half < 2; ++half) {
    for (size_t i = 0; i < n; ++i) {
      if (static_cast<int>(Mix64(i ^ kSplitSeed) & 1) == half) {
        order.push_back(i);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    out->fit_rows += (Mix64(i ^ kSplitSeed) & 1) == 0;
  }
  out->n_eval = n - out->fit_rows;
  if (n < static_cast<size_t>(min_rows) || out->fit_rows == 0 ||
      out->n_eval == 0) {
    return false;
  }
  out->ids.assign(nf, std::vector<uint32_t>(n));
  out->y.resize(n);
  for (size_t r = 0; r < n; ++r) {
    out->y[r] = sample.label(order[r]) > 0.5f ? 1.0 : 0.0;
    for (int f = 0; f < nf; ++f) out->ids[f][r] = sample.id(order[r], f);
  }
  return true;
}

// The base LR on the fit rows: a bias, then backfitting sweeps over the
// fields. Its margin of every row goes to `*m`; false when stopped.
bool FitBase(const SplitSample& s, const CrossSelectionOptions& options,
             uint64_t mask, std::vector<double>* m) {
  const size_t table = mask + 1;
  const double l2 = options.l2;
  const int nf = static_cast<int>(s.ids.size());
  std::vector<double> g(table), h(table);
  double positives = 0;
  for (size_t r = 0; r < s.fit_rows; ++r) positives += s.y[r];
  const double p0 = std::clamp(positives / s.fit_rows, 1e-6, 1 - 1e-6);
  m->assign(s.n, std::log(p0 / (1 - p0)));
  std::vector<std::vector<float>> w(nf);
  for (int sweep = 0; sweep < options.sweeps; ++sweep) {
    for (int f = 0; f < nf; ++f) {
      if (options.stopped && options.stopped()) return false;
      if (w[f].empty()) w[f].assign(table, 0.0f);
      std::fill(g.begin(), g.end(), 0.0);
      std::fill(h.begin(), h.end(), 0.0);
      const std::vector<uint32_t>& col = s.ids[f];
      for (size_t r = 0; r < s.fit_rows; ++r) {
        if (col[r] == CrossSample::kMissing) continue;
        const uint32_t b = BaseBucket(col[r], mask);
        const double p = Sigmoid((*m)[r]);
        g[b] += s.y[r] - p;
        h[b] += p * (1 - p);
      }
      for (size_t b = 0; b < table; ++b) {
        if (h[b] == 0 && w[f][b] == 0) continue;
        g[b] = (g[b] - l2 * w[f][b]) / (h[b] + l2);  // the step
        w[f][b] += static_cast<float>(g[b]);
      }
      for (size_t r = 0; r < s.n; ++r) {
        if (col[r] == CrossSample::kMissing) continue;
        (*m)[r] += g[BaseBucket(col[r], mask)];
      }
    }
  }
  return true;
}

// The base's residuals and curvatures (fit half) and losses (eval half),
// and its mean eval logloss.
struct BaseFit {
  std::vector<double> resid, curv, loss;
  double logloss = 0;
};

BaseFit Residuals(const SplitSample& s, const std::vector<double>& m) {
  BaseFit out;
  out.resid.resize(s.fit_rows);
  out.curv.resize(s.fit_rows);
  out.loss.resize(s.n_eval);
  for (size_t r = 0; r < s.fit_rows; ++r) {
    const double p = Sigmoid(m[r]);
    out.resid[r] = s.y[r] - p;
    out.curv[r] = p * (1 - p);
  }
  for (size_t r = s.fit_rows; r < s.n; ++r) {
    out.loss[r - s.fit_rows] = LogLoss(m[r], s.y[r]);
    out.logloss += out.loss[r - s.fit_rows];
  }
  out.logloss /= static_cast<double>(s.n_eval);
  return out;
}

// Every pair's held-out gain into `*scored`; false when stopped. One array
// of (g, h) per bucket, so an update touches one cache line; the fit rows'
// buckets are kept to clear what was touched.
bool ScorePairs(const SplitSample& s, const std::vector<double>& m,
                const BaseFit& base, const CrossSelectionOptions& options,
                uint64_t mask, std::vector<ScoredPair>* scored) {
  struct Sums {
    double g = 0, h = 0;
  };
  std::vector<Sums> sums(mask + 1);
  std::vector<uint32_t> touched;
  touched.reserve(s.fit_rows);
  const int nf = static_cast<int>(s.ids.size());
  for (int a = 0; a < nf; ++a) {
    for (int b = a + 1; b < nf; ++b) {
      if (options.stopped && options.stopped()) return false;
      const uint64_t salt = Mix64(static_cast<uint64_t>(a) * 256 + b + 1);
      const uint32_t* ca = s.ids[a].data();
      const uint32_t* cb = s.ids[b].data();
      touched.clear();
      for (size_t r = 0; r < s.fit_rows; ++r) {
        if (ca[r] == CrossSample::kMissing || cb[r] == CrossSample::kMissing) {
          continue;
        }
        const uint32_t k = PairBucket(ca[r], cb[r], salt, mask);
        sums[k].g += base.resid[r];
        sums[k].h += base.curv[r];
        touched.push_back(k);
      }
      double gain = 0, gain_sq = 0;
      for (size_t r = s.fit_rows; r < s.n; ++r) {
        if (ca[r] == CrossSample::kMissing || cb[r] == CrossSample::kMissing) {
          continue;
        }
        const Sums& sk = sums[PairBucket(ca[r], cb[r], salt, mask)];
        if (sk.h == 0) continue;
        const double d = sk.g / (sk.h + options.l2);
        const double drop =
            base.loss[r - s.fit_rows] - LogLoss(m[r] + d, s.y[r]);
        gain += drop;
        gain_sq += drop * drop;
      }
      for (uint32_t k : touched) sums[k] = Sums{};
      // The mean drop per eval row and its standard error.
      const double ne = static_cast<double>(s.n_eval);
      const double mean = gain / ne;
      const double var = std::max(0.0, gain_sq / ne - mean * mean);
      const double z = var > 0 ? mean / std::sqrt(var / ne) : 0;
      scored->push_back({{a, b}, mean / base.logloss, z});
    }
  }
  return true;
}

}  // namespace

CrossSelection SelectCrossPairs(const CrossSample& sample,
                                const CrossSelectionOptions& options) {
  CrossSelection result;
  result.rows = sample.rows();
  // 1. The split: fit rows first, then eval rows.
  SplitSample split;
  if (!SplitRows(sample, options.min_rows, &split)) return result;
  const uint64_t mask = (uint64_t{1} << options.table_bits) - 1;
  // 2. The base LR.
  std::vector<double> m;
  if (!FitBase(split, options, mask, &m)) {
    result.stopped = true;
    return result;
  }
  const BaseFit base = Residuals(split, m);
  result.base_logloss = base.logloss;
  // 3. Every pair's held-out gain.
  std::vector<ScoredPair> scored;
  if (!ScorePairs(split, m, base, options, mask, &scored)) {
    result.stopped = true;
    return result;
  }
  // 4. The best pairs above the threshold.
  std::stable_sort(
      scored.begin(), scored.end(),
      [](const ScoredPair& x, const ScoredPair& y) { return x.gain > y.gain; });
  for (const ScoredPair& s : scored) {
    if (s.gain >= options.min_gain && s.z >= options.min_z &&
        result.chosen.size() < static_cast<size_t>(options.max_pairs)) {
      result.chosen.push_back(s);
    } else if (result.runners_up.size() < kRunnersUp) {
      result.runners_up.push_back(s);
    }
  }
  return result;
}

absl::StatusOr<CrossSelection> SelectCrossesForJob(
    pb::JobConfig* job, std::function<bool()> stopped) {
  const absl::Status aborted =
      absl::AbortedError("model.crosses: the selection was stopped");
  if (!SelectsCrosses(job->model())) return CrossSelection{};
  if (job->data().format() != pb::DataConfig::FORMAT_CRITEO) {
    LOG(WARNING) << "model.crosses.auto_max_pairs: crosses need fields "
                    "(data.format FORMAT_CRITEO); none on this data";
    return CrossSelection{};
  }
  const absl::Time start = absl::Now();
  const pb::CrossesConfig& config = job->model().crosses();
  PETREL_ASSIGN_OR_RETURN(ReaderOptions ro,
                          TrainReaderOptions(*job, 0, 1, true));
  ro.cache.mode = CacheMode::kOff;
  ro.crosses.clear();
  ro.with_numeric = false;
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenReader(ro));
  const size_t max_rows = static_cast<size_t>(CrossSampleRows(config));
  CrossSample sample(kCriteoFields);
  Batch batch;
  while (sample.rows() < max_rows) {
    if (stopped && stopped()) return aborted;
    PETREL_ASSIGN_OR_RETURN(bool more, reader->Next(4096, &batch));
    if (!more) break;
    sample.AddBatch(batch, max_rows);
  }
  if (sample.rows() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.crosses: no training examples in ",
                     absl::StrJoin(job->data().train(), ", ")));
  }
  CrossSelectionOptions options;
  options.max_pairs = config.auto_max_pairs();
  options.min_gain = CrossMinGain(config);
  options.l2 = CrossL2(config);
  options.stopped = stopped;
  CrossSelection selection = SelectCrossPairs(sample, options);
  if (selection.stopped) return aborted;
  pb::CrossesConfig* crosses = job->mutable_model()->mutable_crosses();
  for (const ScoredPair& s : selection.chosen) {
    pb::CrossesConfig::Pair* p = crosses->add_pairs();
    p->set_a(s.pair.a);
    p->set_b(s.pair.b);
  }
  if (selection.rows < static_cast<size_t>(options.min_rows)) {
    LOG(WARNING) << "crosses: none: " << selection.rows
                 << " rows are too few to select from (at least "
                 << options.min_rows << ")";
    return selection;
  }
  LOG(INFO) << "crosses: " << selection.chosen.size() << " pair(s) chosen of "
            << kCriteoFields * (kCriteoFields - 1) / 2 << " on "
            << selection.rows << " rows (base logloss "
            << selection.base_logloss << " on the held-out half) in "
            << absl::FormatDuration(absl::Now() - start)
            << "; fields a-b (drop of held-out logloss, its z-score): "
            << (selection.chosen.empty() ? "none" : Describe(selection.chosen))
            << "; best not chosen: " << Describe(selection.runners_up);
  return selection;
}

}  // namespace petrel

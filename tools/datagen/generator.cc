#include "tools/datagen/generator.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "worker/data/feature_hash.h"

namespace petrel {
namespace datagen {
namespace {

constexpr int kInts = kCriteoIntegerFields;
constexpr int kCats = kCriteoCategoricalFields;
constexpr int kFields = kInts + kCats;

// Integer field i: missing with kIntMissing[i], else
// floor(exp(kIntMu[i] + kIntSigma[i] * N(0, 1))) - kIntOffset[i].
constexpr std::array<double, kInts> kIntMissing = {
    0.45, 0, 0.2, 0.2, 0.05, 0.2, 0.05, 0, 0.05, 0.45, 0.05, 0.75, 0.2};
constexpr std::array<double, kInts> kIntMu = {0.5, 2.0, 2.5, 1.5, 7.0, 3.5, 1.5,
                                              2.0, 3.5, 0.0, 0.5, 0.0, 2.0};
constexpr std::array<double, kInts> kIntSigma = {
    1.0, 1.5, 1.5, 1.0, 2.0, 1.8, 1.2, 1.0, 1.2, 0.5, 1.0, 0.8, 1.2};
constexpr std::array<int64_t, kInts> kIntOffset = {0, 3, 0, 0, 0, 0, 0,
                                                   0, 0, 0, 0, 0, 0};
constexpr std::array<double, kCats> kCatMissing = {
    0,    0, 0.03, 0.03, 0, 0,    0.1,  0,    0,    0, 0.03, 0,    0,
    0.03, 0, 0,    0,    0, 0.44, 0.44, 0.03, 0.76, 0, 0.03, 0.44, 0.44};
// Field pairs (0..38) with a ground-truth interaction weight.
constexpr std::array<std::pair<int, int>, 6> kInteractions = {
    {{13, 14}, {15, 18}, {16, 25}, {1, 20}, {30, 35}, {4, 36}}};

// Vocabulary of categorical field j: 10^3 .. 10^6, spread over the fields.
int64_t Vocabulary(int j) {
  return static_cast<int64_t>(
      std::round(std::pow(10.0, 3 + 3 * ((j * 7) % kCats) / 25.0)));
}

double Sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

double Entropy(double p) {
  if (p <= 0 || p >= 1) return 0;
  return -(p * std::log(p) + (1 - p) * std::log1p(-p));
}

void AppendHex8(uint32_t value, std::string* text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[8];
  for (int i = 7; i >= 0; --i, value >>= 4) buf[i] = kDigits[value & 15];
  text->append(buf, 8);
}

template <typename T>
void AppendNumber(T value, std::string* text) {
  char buf[24];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  text->append(buf, result.ptr);
}

uint64_t SubSeed(uint64_t seed, uint64_t purpose) {
  return Mix64(Mix64(seed) ^ Mix64(purpose + 0x9e3779b97f4a7c15ULL));
}

}  // namespace

struct Generator::Raw {
  std::array<bool, kFields> present;
  std::array<int64_t, kInts> ints;
  std::array<uint32_t, kCats> cats;
  std::array<uint64_t, kFields> keys;  // reader keys, set by Logit()
};

double SplitStats::positive_rate() const {
  return examples == 0 ? 0 : static_cast<double>(positives) / examples;
}

double SplitStats::bayes_logloss() const {
  return examples == 0 ? 0 : entropy_sum / examples;
}

double SplitStats::constant_logloss() const { return Entropy(positive_rate()); }

absl::StatusOr<Generator> Generator::Create(const DatagenOptions& options) {
  if (options.index_bits < 8 || options.index_bits > 62) {
    return absl::InvalidArgumentError(
        absl::StrCat("index_bits ", options.index_bits, " is not in [8, 62]"));
  }
  if (!(options.weight_stddev > 0 && options.weight_stddev < 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight_stddev ", options.weight_stddev, " is not in (0, 100)"));
  }
  if (!(options.positive_rate > 0 && options.positive_rate < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "positive_rate ", options.positive_rate, " is not in (0, 1)"));
  }
  if (!(options.zipf_exponent > 0 && options.zipf_exponent <= 10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zipf_exponent ", options.zipf_exponent, " is not in (0, 10]"));
  }
  if (!(options.interaction_scale > 0 && options.interaction_scale < 100)) {
    return absl::InvalidArgumentError(absl::StrCat("interaction_scale ",
                                                   options.interaction_scale,
                                                   " is not in (0, 100)"));
  }
  if (options.max_fields < 1 || options.max_fields > kFields) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_fields ", options.max_fields, " is not in [1, ", kFields, "]"));
  }
  if (options.interaction_rank < 0 || options.interaction_rank > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interaction_rank ", options.interaction_rank, " is not in [0, 64]"));
  }
  Generator generator(options);
  generator.CalibrateBias();
  return generator;
}

Generator::Generator(const DatagenOptions& options)
    : options_(options), mask_((uint64_t{1} << options.index_bits) - 1) {
  for (int j = 0; j < kCats; ++j) {
    zipf_.emplace_back(Vocabulary(j), options.zipf_exponent);
  }
}

uint64_t Generator::ModelIndex(uint64_t key) const { return (key & mask_) + 1; }

double Generator::Weight(uint64_t model_index) const {
  return options_.weight_stddev *
         HashNormal(Mix64(model_index ^ SubSeed(options_.seed, 1)));
}

void Generator::SampleRaw(Rng* rng, Raw* raw) const {
  for (int i = 0; i < kInts; ++i) {
    raw->present[i] = rng->Uniform() >= kIntMissing[i];
    if (!raw->present[i]) continue;
    const double x = std::min(kIntMu[i] + kIntSigma[i] * rng->Normal(), 30.0);
    raw->ints[i] = static_cast<int64_t>(std::exp(x)) - kIntOffset[i];
  }
  const uint64_t value_seed = SubSeed(options_.seed, 2);
  for (int j = 0; j < kCats; ++j) {
    raw->present[kInts + j] = rng->Uniform() >= kCatMissing[j];
    if (!raw->present[kInts + j]) continue;
    const uint64_t rank = static_cast<uint64_t>(
        zipf_[j].Sample([rng] { return rng->Uniform(); }));
    raw->cats[j] = static_cast<uint32_t>(
        Mix64(value_seed + (static_cast<uint64_t>(j) << 40) + rank));
  }
  if (options_.max_fields < kFields) KeepRandomFields(rng, raw);
}

void Generator::KeepRandomFields(Rng* rng, Raw* raw) const {
  std::array<int, kFields> fields;
  int n = 0;
  for (int f = 0; f < kFields; ++f) {
    if (raw->present[f]) fields[n++] = f;
  }
  // A partial Fisher-Yates shuffle: the first max_fields of `fields` are a
  // uniform random subset of the present ones.
  const int keep = std::min(n, options_.max_fields);
  for (int i = 0; i < keep; ++i) {
    const int j =
        i + static_cast<int>(rng->Uniform() * static_cast<double>(n - i));
    std::swap(fields[i], fields[std::min(j, n - 1)]);
  }
  for (int i = keep; i < n; ++i) raw->present[fields[i]] = false;
}

double Generator::Logit(Raw* raw) const {
  double z = 0;
  std::string hex;
  for (int f = 0; f < kFields; ++f) {
    if (!raw->present[f]) continue;
    if (f < kInts) {
      raw->keys[f] = CriteoIntegerKey(f, raw->ints[f]);
    } else {
      hex.clear();
      AppendHex8(raw->cats[f - kInts], &hex);
      raw->keys[f] = HashFeature(f, hex);
    }
    z += Weight(ModelIndex(raw->keys[f]));
  }
  if (!options_.interactions) return z;
  const double scale = options_.weight_stddev * options_.interaction_scale;
  for (const auto& [a, b] : kInteractions) {
    if (!raw->present[a] || !raw->present[b]) continue;
    z += scale *
         InteractionWeight(ModelIndex(raw->keys[a]), ModelIndex(raw->keys[b]));
  }
  return z;
}

double Generator::InteractionWeight(uint64_t a, uint64_t b) const {
  const int rank = options_.interaction_rank;
  if (rank == 0) {
    return HashNormal(Mix64(Mix64(a ^ SubSeed(options_.seed, 3)) + b));
  }
  // Factor d of a value: purposes 100 + d (left) and 200 + d (right) keep
  // u and v independent even for equal model indices.
  double dot = 0;
  for (int d = 0; d < rank; ++d) {
    dot += HashNormal(Mix64(a ^ SubSeed(options_.seed, 100 + d))) *
           HashNormal(Mix64(b ^ SubSeed(options_.seed, 200 + d)));
  }
  return dot / std::sqrt(static_cast<double>(rank));
}

namespace {

// The libsvm features of an example: sorted model indices with the number
// of fields mapped to each. Returns the feature count.
int LibsvmFeatures(const std::array<bool, kFields>& present,
                   const std::array<uint64_t, kFields>& indices,
                   std::array<std::pair<uint64_t, int>, kFields>* out) {
  int n = 0;
  for (int f = 0; f < kFields; ++f) {
    if (present[f]) (*out)[n++] = {indices[f], 1};
  }
  std::sort(out->begin(), out->begin() + n);
  int merged = 0;
  for (int i = 0; i < n; ++i) {
    if (merged > 0 && (*out)[merged - 1].first == (*out)[i].first) {
      ++(*out)[merged - 1].second;
    } else {
      (*out)[merged++] = (*out)[i];
    }
  }
  return merged;
}

}  // namespace

void Generator::AppendText(const Raw& raw, int label, std::string* text) const {
  text->push_back(static_cast<char>('0' + label));
  if (options_.format == DataFormat::kCriteo) {
    for (int i = 0; i < kInts; ++i) {
      text->push_back('\t');
      if (raw.present[i]) AppendNumber(raw.ints[i], text);
    }
    for (int j = 0; j < kCats; ++j) {
      text->push_back('\t');
      if (raw.present[kInts + j]) AppendHex8(raw.cats[j], text);
    }
  } else {
    std::array<uint64_t, kFields> indices;
    for (int f = 0; f < kFields; ++f) {
      if (raw.present[f]) indices[f] = ModelIndex(raw.keys[f]);
    }
    std::array<std::pair<uint64_t, int>, kFields> features;
    const int n = LibsvmFeatures(raw.present, indices, &features);
    for (int i = 0; i < n; ++i) {
      text->push_back(' ');
      AppendNumber(features[i].first, text);
      text->push_back(':');
      AppendNumber(features[i].second, text);
    }
  }
  text->push_back('\n');
}

namespace {

// Fills `example`'s keys and values as a reader of `format` returns them.
void ReaderView(DataFormat format, const std::array<bool, kFields>& present,
                const std::array<uint64_t, kFields>& keys, uint64_t mask,
                Example* example) {
  example->keys.clear();
  example->values.clear();
  if (format == DataFormat::kCriteo) {
    for (int f = 0; f < kFields; ++f) {
      if (!present[f]) continue;
      example->keys.push_back(keys[f]);
      example->values.push_back(1);
    }
    return;
  }
  std::array<uint64_t, kFields> indices;
  for (int f = 0; f < kFields; ++f) {
    if (present[f]) indices[f] = (keys[f] & mask) + 1;
  }
  std::array<std::pair<uint64_t, int>, kFields> features;
  const int n = LibsvmFeatures(present, indices, &features);
  for (int i = 0; i < n; ++i) {
    example->keys.push_back(features[i].first);
    example->values.push_back(static_cast<float>(features[i].second));
  }
}

// The RNG of a stream (0 = train, 1 = test, others for internal use).
Rng StreamRng(uint64_t seed, uint64_t stream) {
  return Rng(SubSeed(seed, 1000 + stream));
}

}  // namespace

void Generator::Generate(uint64_t stream, int64_t count, std::string* text,
                         SplitStats* stats,
                         std::vector<Example>* examples) const {
  Rng rng = StreamRng(options_.seed, stream);
  GenerateFrom(&rng, count, text, stats, examples);
}

void Generator::GenerateFrom(Rng* rng, int64_t count, std::string* text,
                             SplitStats* stats,
                             std::vector<Example>* examples) const {
  Raw raw;
  for (int64_t n = 0; n < count; ++n) {
    SampleRaw(rng, &raw);
    const double p = Sigmoid(bias_ + Logit(&raw));
    const int label = rng->Uniform() < p ? 1 : 0;
    ++stats->examples;
    stats->positives += label;
    stats->entropy_sum += Entropy(p);
    AppendText(raw, label, text);
    if (examples != nullptr) {
      examples->emplace_back();
      examples->back().label = static_cast<float>(label);
      examples->back().probability = p;
      ReaderView(options_.format, raw.present, raw.keys, mask_,
                 &examples->back());
    }
  }
}

absl::StatusOr<SplitStats> Generator::WriteFile(const std::string& path,
                                                uint64_t stream,
                                                int64_t count) const {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", path, ": ", strerror(errno)));
  }
  constexpr int64_t kChunk = 4096;
  Rng rng = StreamRng(options_.seed, stream);
  SplitStats stats;
  std::string text;
  bool ok = true;
  for (int64_t done = 0; done < count && ok; done += kChunk) {
    text.clear();
    GenerateFrom(&rng, std::min(kChunk, count - done), &text, &stats, nullptr);
    ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  }
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    return absl::DataLossError(absl::StrCat("cannot write ", path));
  }
  return stats;
}

void Generator::CalibrateBias() {
  constexpr int kSamples = 20000;
  Rng rng = StreamRng(options_.seed, 999);
  std::vector<double> logits(kSamples);
  Raw raw;
  for (double& z : logits) {
    SampleRaw(&rng, &raw);
    z = Logit(&raw);
  }
  // The mean probability increases with the bias: bisect.
  double low = -50, high = 50;
  for (int iter = 0; iter < 60; ++iter) {
    const double mid = (low + high) / 2;
    double sum = 0;
    for (double z : logits) sum += Sigmoid(mid + z);
    (sum / kSamples < options_.positive_rate ? low : high) = mid;
  }
  bias_ = (low + high) / 2;
}

double Generator::GroundTruthLogit(absl::Span<const uint64_t> keys,
                                   absl::Span<const float> values) const {
  CHECK(!options_.interactions);
  CHECK_EQ(keys.size(), values.size());
  double z = bias_;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t index =
        options_.format == DataFormat::kLibsvm ? keys[i] : ModelIndex(keys[i]);
    z += values[i] * Weight(index);
  }
  return z;
}

}  // namespace datagen
}  // namespace petrel

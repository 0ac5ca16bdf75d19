#include "job/crosses_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "job/criteo.h"

namespace petrel {

std::vector<CrossPair> CrossPairs(const pb::ModelConfig& model) {
  std::vector<CrossPair> pairs;
  for (const pb::CrossesConfig::Pair& p : model.crosses().pairs()) {
    pairs.push_back({p.a(), p.b()});
  }
  return pairs;
}

int CrossSlots(const pb::ModelConfig& model) {
  return std::max(model.crosses().auto_max_pairs(),
                  model.crosses().pairs_size());
}

int EmbeddedCrossSlots(const pb::ModelConfig& model) {
  return model.crosses().embed() ? CrossSlots(model) : 0;
}

bool SelectsCrosses(const pb::ModelConfig& model) {
  return model.crosses().auto_max_pairs() > 0 &&
         model.crosses().pairs().empty();
}

int CrossSampleRows(const pb::CrossesConfig& c) {
  return c.auto_sample_rows() == 0 ? 200000 : c.auto_sample_rows();
}

double CrossMinGain(const pb::CrossesConfig& c) {
  return c.auto_min_gain() == 0 ? 3e-4 : c.auto_min_gain();
}

double CrossL2(const pb::CrossesConfig& c) {
  return c.auto_l2() == 0 ? 10.0 : c.auto_l2();
}

absl::Status CheckCrossesConfig(const pb::JobConfig& job) {
  const pb::CrossesConfig& c = job.model().crosses();
  if (c.pairs().empty() && c.auto_max_pairs() == 0) return absl::OkStatus();
  if (job.data().format() != pb::DataConfig::FORMAT_CRITEO &&
      !c.pairs().empty()) {
    return absl::InvalidArgumentError(
        "model.crosses.pairs: crossed features need fields (data.format "
        "FORMAT_CRITEO)");
  }
  if (c.pairs_size() > kMaxCrossPairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.crosses.pairs: ", c.pairs_size(),
                     " pairs, at most ", kMaxCrossPairs));
  }
  std::vector<CrossPair> seen;
  for (const CrossPair& p : CrossPairs(job.model())) {
    if (p.a < 0 || p.a >= kCriteoFields || p.b < 0 || p.b >= kCriteoFields ||
        p.a == p.b) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.crosses.pairs: {a: ", p.a, " b: ", p.b,
          "} is not two different field numbers in 0..", kCriteoFields - 1));
    }
    const CrossPair sorted{std::min(p.a, p.b), std::max(p.a, p.b)};
    if (std::find(seen.begin(), seen.end(), sorted) != seen.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.crosses.pairs: {a: ", p.a, " b: ", p.b, "} is listed twice"));
    }
    seen.push_back(sorted);
  }
  if (c.auto_max_pairs() < 0 || c.auto_max_pairs() > kMaxCrossPairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.crosses.auto_max_pairs: ", c.auto_max_pairs(),
                     " is not in 0..", kMaxCrossPairs));
  }
  if (c.auto_max_pairs() > 0 && c.pairs_size() > c.auto_max_pairs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.crosses.pairs: ", c.pairs_size(),
        " pairs listed, more than auto_max_pairs ", c.auto_max_pairs()));
  }
  if (c.auto_sample_rows() < 0 || c.auto_sample_rows() > 10000000) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.crosses.auto_sample_rows: ", c.auto_sample_rows(),
                     " is not in 0..10000000"));
  }
  if (!std::isfinite(c.auto_min_gain()) || c.auto_min_gain() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.crosses.auto_min_gain: ", c.auto_min_gain(),
                     " is not a finite value >= 0"));
  }
  if (!std::isfinite(c.auto_l2()) || c.auto_l2() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.crosses.auto_l2: ", c.auto_l2(), " is not a finite value >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace petrel

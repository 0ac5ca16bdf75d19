#include "base/metrics.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace petrel {
namespace {

bool IsMetricNameChar(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
      c == ':') {
    return true;
  }
  return !first && c >= '0' && c <= '9';
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsMetricNameChar(name[i], i == 0)) return false;
  }
  return true;
}

// Label names are metric names without ':'; names starting with "__" are
// reserved for Prometheus itself.
bool IsValidLabelName(std::string_view name) {
  if (!IsValidMetricName(name) || name.find(':') != std::string_view::npos) {
    return false;
  }
  return name.substr(0, 2) != "__";
}

MetricLabels SortedLabels(const MetricLabels& labels) {
  MetricLabels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// SortedLabels plus the checks that only a bug in our own code can fail
// (prometheus-cpp would throw on them).
MetricLabels CanonicalLabels(std::string_view metric,
                             const MetricLabels& labels) {
  MetricLabels sorted = SortedLabels(labels);
  for (size_t i = 0; i < sorted.size(); ++i) {
    CHECK(IsValidLabelName(sorted[i].first))
        << "invalid label name '" << sorted[i].first << "' on metric "
        << metric;
    CHECK(i == 0 || sorted[i].first != sorted[i - 1].first)
        << "duplicate label name '" << sorted[i].first << "' on metric "
        << metric;
  }
  return sorted;
}

prometheus::Labels ToLabels(const MetricLabels& labels) {
  return prometheus::Labels(labels.begin(), labels.end());
}

// `name{label="value",...}` for error messages.
std::string SeriesName(std::string_view name, const MetricLabels& labels) {
  std::string out(name);
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "{" : ",", labels[i].first, "=\"",
                    labels[i].second, "\"");
  }
  if (!labels.empty()) out.push_back('}');
  return out;
}

// prometheus-cpp writes HELP text as it is given; the exposition format
// wants backslash and newline escaped there.
std::string EscapeHelp(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

const char* TypeName(int type) {
  static const char* const kNames[] = {"counter", "gauge", "histogram"};
  return kNames[type];
}

}  // namespace

void Counter::Increment(int64_t n) {
  DCHECK_GE(n, 0) << "counters never go down";
  impl_->Increment(static_cast<double>(n));
}

int64_t Counter::value() const { return static_cast<int64_t>(impl_->Value()); }

void Gauge::Set(double v) { impl_->Set(v); }
void Gauge::Add(double d) { impl_->Increment(d); }
double Gauge::value() const { return impl_->Value(); }

void Histogram::Observe(double value) { impl_->Observe(value); }
uint64_t Histogram::count() const {
  return impl_->Collect().histogram.sample_count;
}
double Histogram::sum() const { return impl_->Collect().histogram.sample_sum; }

std::vector<double> LatencyBucketsSeconds() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
          50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
}

MetricsRegistry::MetricsRegistry()
    : registry_(std::make_shared<prometheus::Registry>()) {}

MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::GetFamily(std::string_view name,
                                                    std::string_view help,
                                                    MetricType type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    CHECK(IsValidMetricName(name)) << "invalid metric name '" << name << "'";
    Family family;
    family.type = type;
    const std::string n(name), h = EscapeHelp(help);
    switch (type) {
      case MetricType::kCounter:
        family.family =
            &prometheus::BuildCounter().Name(n).Help(h).Register(*registry_);
        break;
      case MetricType::kGauge:
        family.family =
            &prometheus::BuildGauge().Name(n).Help(h).Register(*registry_);
        break;
      case MetricType::kHistogram:
        family.family =
            &prometheus::BuildHistogram().Name(n).Help(h).Register(*registry_);
        break;
    }
    it = families_.emplace(n, std::move(family)).first;
  }
  CHECK(it->second.type == type)
      << "metric " << name << " is already registered as a "
      << TypeName(static_cast<int>(it->second.type));
  return it->second;
}

Counter* MetricsRegistry::GetCounter(std::string_view name,
                                     std::string_view help,
                                     const MetricLabels& labels) {
  MetricLabels key = CanonicalLabels(name, labels);
  absl::MutexLock lock(&mu_);
  Family& family = GetFamily(name, help, MetricType::kCounter);
  std::unique_ptr<Counter>& counter = family.counters[key];
  if (counter == nullptr) {
    auto* f =
        static_cast<prometheus::Family<prometheus::Counter>*>(family.family);
    counter = std::make_unique<Counter>(&f->Add(ToLabels(key)));
  }
  return counter.get();
}

Gauge* MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                 const MetricLabels& labels) {
  MetricLabels key = CanonicalLabels(name, labels);
  absl::MutexLock lock(&mu_);
  Family& family = GetFamily(name, help, MetricType::kGauge);
  std::unique_ptr<Gauge>& gauge = family.gauges[key];
  if (gauge == nullptr) {
    auto* f =
        static_cast<prometheus::Family<prometheus::Gauge>*>(family.family);
    gauge = std::make_unique<Gauge>(&f->Add(ToLabels(key)));
  }
  return gauge.get();
}

Histogram* MetricsRegistry::GetHistogram(std::string_view name,
                                         std::string_view help,
                                         const std::vector<double>& buckets,
                                         const MetricLabels& labels) {
  CHECK(std::is_sorted(buckets.begin(), buckets.end()))
      << "histogram " << name << " buckets are not increasing";
  MetricLabels key = CanonicalLabels(name, labels);
  absl::MutexLock lock(&mu_);
  Family& family = GetFamily(name, help, MetricType::kHistogram);
  std::unique_ptr<Histogram>& histogram = family.histograms[key];
  if (histogram == nullptr) {
    auto* f =
        static_cast<prometheus::Family<prometheus::Histogram>*>(family.family);
    histogram = std::make_unique<Histogram>(&f->Add(
        ToLabels(key), prometheus::Histogram::BucketBoundaries(buckets)));
  }
  return histogram.get();
}

void MetricsRegistry::AddCollectable(
    std::shared_ptr<prometheus::Collectable> collectable) {
  absl::MutexLock lock(&mu_);
  collectables_.push_back(std::move(collectable));
}

std::vector<prometheus::MetricFamily> MetricsRegistry::Collect() const {
  std::vector<prometheus::MetricFamily> out = registry_->Collect();
  std::vector<std::shared_ptr<prometheus::Collectable>> more;
  {
    absl::MutexLock lock(&mu_);
    more = collectables_;
  }
  for (const auto& c : more) {
    std::vector<prometheus::MetricFamily> families = c->Collect();
    out.insert(out.end(), std::make_move_iterator(families.begin()),
               std::make_move_iterator(families.end()));
  }
  return out;
}

std::string MetricsRegistry::RenderPrometheus() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

absl::StatusOr<double> MetricsRegistry::Value(
    std::string_view name, const MetricLabels& labels) const {
  MetricLabels key = SortedLabels(labels);
  absl::MutexLock lock(&mu_);
  auto family = families_.find(name);
  if (family != families_.end()) {
    const Family& f = family->second;
    if (auto c = f.counters.find(key); c != f.counters.end()) {
      return static_cast<double>(c->second->value());
    }
    if (auto g = f.gauges.find(key); g != f.gauges.end()) {
      return g->second->value();
    }
    if (auto h = f.histograms.find(key); h != f.histograms.end()) {
      return static_cast<double>(h->second->count());
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no metric series ", SeriesName(name, key)));
}

std::vector<std::pair<MetricLabels, double>> MetricsRegistry::Series(
    std::string_view name) const {
  std::vector<std::pair<MetricLabels, double>> out;
  absl::MutexLock lock(&mu_);
  auto family = families_.find(name);
  if (family == families_.end()) return out;
  for (const auto& [labels, counter] : family->second.counters) {
    out.emplace_back(labels, static_cast<double>(counter->value()));
  }
  for (const auto& [labels, gauge] : family->second.gauges) {
    out.emplace_back(labels, gauge->value());
  }
  return out;
}

}  // namespace petrel

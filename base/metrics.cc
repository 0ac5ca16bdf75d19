#include "base/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

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

// Returns the labels sorted by name, so that the order callers list them in
// does not create distinct series.
MetricLabels SortedLabels(const MetricLabels& labels) {
  MetricLabels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// SortedLabels plus the checks that only a bug in our own code can fail.
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

// Escapes text for the exposition format: backslash and newline always
// (HELP text), and double quotes too when `quote` is set (label values).
std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view text) { return Escape(text, false); }

std::string EscapeLabelValue(std::string_view text) {
  return Escape(text, true);
}

// Formats a sample value as the exposition format wants it: NaN, +Inf, -Inf,
// or a decimal that reads back as the same double (15 significant digits
// when they suffice, else 17).
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  if (std::strtod(buf, nullptr) != v) {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  }
  return buf;
}

// Returns `name{label="value",...}`, or just `name` when there are no labels.
std::string SeriesName(std::string_view name, const MetricLabels& labels) {
  std::string out(name);
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "{" : ",", labels[i].first, "=\"",
                    EscapeLabelValue(labels[i].second), "\"");
  }
  if (!labels.empty()) out.push_back('}');
  return out;
}

}  // namespace

void Counter::Increment(int64_t n) {
  DCHECK_GE(n, 0) << "counters never go down";
  value_.fetch_add(n, std::memory_order_relaxed);
}

void Gauge::Add(double d) {
  double current = value_.load(std::memory_order_relaxed);
  // On failure compare_exchange_weak reloads `current`, so the loop retries
  // with the latest value.
  while (!value_.compare_exchange_weak(current, current + d,
                                       std::memory_order_relaxed)) {
  }
}

MetricsRegistry::Family& MetricsRegistry::GetFamily(std::string_view name,
                                                    std::string_view help,
                                                    MetricType type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    CHECK(IsValidMetricName(name)) << "invalid metric name '" << name << "'";
    it = families_.emplace(std::string(name), Family{}).first;
    it->second.help = std::string(help);
    it->second.type = type;
  }
  CHECK(it->second.type == type)
      << "metric " << name << " is already registered as a "
      << (it->second.type == MetricType::kCounter ? "counter" : "gauge");
  return it->second;
}

Counter* MetricsRegistry::GetCounter(std::string_view name,
                                     std::string_view help,
                                     const MetricLabels& labels) {
  MetricLabels key = CanonicalLabels(name, labels);
  absl::MutexLock lock(&mu_);
  Family& family = GetFamily(name, help, MetricType::kCounter);
  std::unique_ptr<Counter>& counter = family.counters[std::move(key)];
  if (counter == nullptr) counter = std::make_unique<Counter>();
  return counter.get();
}

Gauge* MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                 const MetricLabels& labels) {
  MetricLabels key = CanonicalLabels(name, labels);
  absl::MutexLock lock(&mu_);
  Family& family = GetFamily(name, help, MetricType::kGauge);
  std::unique_ptr<Gauge>& gauge = family.gauges[std::move(key)];
  if (gauge == nullptr) gauge = std::make_unique<Gauge>();
  return gauge.get();
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) {
    const bool is_counter = family.type == MetricType::kCounter;
    absl::StrAppend(&out, "# HELP ", name, " ", EscapeHelp(family.help), "\n",
                    "# TYPE ", name, is_counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, counter] : family.counters) {
      absl::StrAppend(&out, SeriesName(name, labels), " ", counter->value(),
                      "\n");
    }
    for (const auto& [labels, gauge] : family.gauges) {
      absl::StrAppend(&out, SeriesName(name, labels), " ",
                      FormatDouble(gauge->value()), "\n");
    }
  }
  return out;
}

absl::StatusOr<double> MetricsRegistry::Value(
    std::string_view name, const MetricLabels& labels) const {
  MetricLabels key = SortedLabels(labels);
  absl::MutexLock lock(&mu_);
  auto family = families_.find(name);
  if (family != families_.end()) {
    auto counter = family->second.counters.find(key);
    if (counter != family->second.counters.end()) {
      return static_cast<double>(counter->second->value());
    }
    auto gauge = family->second.gauges.find(key);
    if (gauge != family->second.gauges.end()) return gauge->second->value();
  }
  return absl::NotFoundError(
      absl::StrCat("no metric series ", SeriesName(name, key)));
}

}  // namespace petrel

// Prometheus metrics for Petrel daemons, backed by prometheus-cpp (Debian's
// prometheus-cpp-dev).
//
// A MetricsRegistry owns named counters, gauges and histograms, each
// optionally split into labelled series
// (`petrel_van_messages_rejected_total{reason="bad_magic"}`). Code on the
// hot path looks a series up once, keeps the returned pointer and updates it
// without a lock (histograms take prometheus-cpp's short per-series lock);
// MetricsHttpServer serves the registry in the text exposition format 0.0.4.
// This header is the one API Petrel code uses; prometheus-cpp stays behind
// it, so a series is found by name and labels as before.
//
//   MetricsRegistry registry;
//   Counter* dropped = registry.GetCounter(
//       "petrel_van_messages_rejected_total", "Messages dropped, by reason.",
//       {{"reason", "bad_magic"}});
//   dropped->Increment();

#ifndef PETREL_BASE_METRICS_H_
#define PETREL_BASE_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Collectable;
class Counter;
class Gauge;
class Histogram;
class Registry;
struct MetricFamily;
}  // namespace prometheus

namespace petrel {

// Label name/value pairs of one series. The order does not matter: the
// registry sorts labels by name, so {a, b} and {b, a} name the same series.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count, such as messages sent. Thread-safe and
// lock-free. Values are exact up to 2^53.
class Counter {
 public:
  // `impl` is owned by the registry that made this Counter.
  explicit Counter(prometheus::Counter* impl) : impl_(impl) {}
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds n to the counter. REQUIRES: n >= 0 (counters never go down).
  void Increment(int64_t n = 1);

  int64_t value() const;

 private:
  prometheus::Counter* const impl_;
};

// A value that can go up and down, such as a queue depth. Thread-safe and
// lock-free.
class Gauge {
 public:
  explicit Gauge(prometheus::Gauge* impl) : impl_(impl) {}
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v);
  // Adds d (which may be negative) atomically with respect to other Add/Set.
  void Add(double d);

  double value() const;

 private:
  prometheus::Gauge* const impl_;
};

// Observations counted into fixed buckets (a latency distribution), exposed
// as `name_bucket{le=...}`, `name_sum` and `name_count`, so that
// histogram_quantile() gives percentiles. Thread-safe.
class Histogram {
 public:
  explicit Histogram(prometheus::Histogram* impl) : impl_(impl) {}
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value);
  // Observations so far, and their sum.
  uint64_t count() const;
  double sum() const;

 private:
  prometheus::Histogram* const impl_;
};

// Bucket upper bounds for request latencies in seconds: 50 us to 10 s, about
// three per decade.
std::vector<double> LatencyBucketsSeconds();

// Owns every metric of one process. Thread-safe: all methods may be called
// concurrently. Returned Counter/Gauge/Histogram pointers are owned by the
// registry and stay valid for the registry's lifetime.
//
// Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]* and label names
// [a-zA-Z_][a-zA-Z0-9_]* (not starting with "__"); both come from our own
// code, so a bad one is a bug and CHECK-fails. Label values may be any bytes.
class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Returns the counter series `name{labels}`, creating it (at 0) on first
  // use; later calls with the same name and labels return the same pointer,
  // so callers may call this repeatedly. `help` is taken from the first call
  // for the name. REQUIRES: name and label names are valid, labels has no
  // duplicate names, and `name` is not registered with another type.
  Counter* GetCounter(std::string_view name, std::string_view help,
                      const MetricLabels& labels = {});

  // As GetCounter, for gauges.
  Gauge* GetGauge(std::string_view name, std::string_view help,
                  const MetricLabels& labels = {});

  // As GetCounter, for histograms with the given bucket upper bounds
  // (increasing; +Inf is implied). A series made earlier keeps its buckets.
  Histogram* GetHistogram(std::string_view name, std::string_view help,
                          const std::vector<double>& buckets,
                          const MetricLabels& labels = {});

  // Adds a source of metrics computed at collection time (e.g. the process
  // metrics), kept alive by the registry and collected after its own.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Every metric of the registry and its collectables, as prometheus-cpp
  // serves them. Called by the HTTP endpoint at each scrape.
  std::vector<prometheus::MetricFamily> Collect() const;

  // Renders Collect() in the Prometheus text exposition format 0.0.4: each
  // family with one "# HELP" and one "# TYPE" line, then its series.
  std::string RenderPrometheus() const;

  // Returns the current value of the counter or gauge series
  // `name{labels}` (for a histogram: its count of observations), or
  // NotFound when no such series exists. Never CHECK-fails, so it may be
  // given names typed by a user.
  absl::StatusOr<double> Value(std::string_view name,
                               const MetricLabels& labels = {}) const;

  // Every series of the counter or gauge `name` with its value, sorted by
  // labels; empty when there is no such metric.
  std::vector<std::pair<MetricLabels, double>> Series(
      std::string_view name) const;

 private:
  enum class MetricType { kCounter, kGauge, kHistogram };

  // One metric name with all of its labelled series; the map of its type
  // is used. `family` is the prometheus-cpp family (owned by registry_).
  struct Family {
    MetricType type;
    void* family = nullptr;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
    std::map<MetricLabels, std::unique_ptr<Histogram>> histograms;
  };

  // Returns the family `name`, creating it when absent. CHECK-fails when the
  // name is invalid or registered with another type.
  Family& GetFamily(std::string_view name, std::string_view help,
                    MetricType type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<prometheus::Registry> registry_;
  mutable absl::Mutex mu_;
  // Keyed by metric name; std::less<> allows lookup by string_view.
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_BASE_METRICS_H_

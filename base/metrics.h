// Prometheus-style metrics for Petrel daemons.
//
// A MetricsRegistry owns named counters and gauges, each optionally split into
// labelled series (`petrel_van_dropped_messages_total{reason="bad_magic"}`).
// Code on the hot path looks a series up once, keeps the returned pointer and
// updates it lock-free; MetricsHttpServer renders the registry in the
// Prometheus text exposition format 0.0.4 for scraping.
//
//   MetricsRegistry registry;
//   Counter* dropped = registry.GetCounter(
//       "petrel_van_dropped_messages_total", "Messages dropped by the
//       decoder.",
//       {{"reason", "bad_magic"}});
//   dropped->Increment();

#ifndef PETREL_BASE_METRICS_H_
#define PETREL_BASE_METRICS_H_

#include <atomic>
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

namespace petrel {

// Label name/value pairs of one series. The order does not matter: the
// registry sorts labels by name, so {a, b} and {b, a} name the same series.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing integer, such as a count of messages sent.
// Thread-safe and lock-free.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds n to the counter. REQUIRES: n >= 0 (counters never go down).
  void Increment(int64_t n = 1);

  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  // Relaxed: the counter is an independent statistic that publishes no other
  // memory; readers only need an eventually current value.
  std::atomic<int64_t> value_{0};
};

// A value that can go up and down, such as a queue depth. Thread-safe and
// lock-free.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  // Adds d (which may be negative) atomically with respect to other Add/Set.
  void Add(double d);

  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  // Relaxed for the same reason as Counter::value_.
  std::atomic<double> value_{0.0};
};

// Owns every metric of one process. Thread-safe: all methods may be called
// concurrently. Returned Counter/Gauge pointers are owned by the registry and
// stay valid for the registry's lifetime.
//
// Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]* and label names
// [a-zA-Z_][a-zA-Z0-9_]* (not starting with "__"); both come from our own
// code, so a bad one is a bug and CHECK-fails. Label values may be any bytes.
class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Returns the counter series `name{labels}`, creating it (at 0) on first
  // use; later calls with the same name and labels return the same pointer,
  // so callers may call this repeatedly. `help` is taken from the first call
  // for the name. REQUIRES: name and label names are valid, labels has no
  // duplicate names, and `name` is not registered as a gauge.
  Counter* GetCounter(std::string_view name, std::string_view help,
                      const MetricLabels& labels = {});

  // As GetCounter, for gauges. REQUIRES: `name` is not registered as a
  // counter.
  Gauge* GetGauge(std::string_view name, std::string_view help,
                  const MetricLabels& labels = {});

  // Renders every metric in the Prometheus text exposition format 0.0.4:
  // families sorted by name, each with one "# HELP" and one "# TYPE" line,
  // then each series sorted by labels. Help text and label values are
  // escaped as the format requires.
  std::string RenderPrometheus() const;

  // Returns the current value of the counter or gauge series
  // `name{labels}`, or NotFound when no such series exists. Never
  // CHECK-fails, so it may be given names typed by a user.
  absl::StatusOr<double> Value(std::string_view name,
                               const MetricLabels& labels = {}) const;

 private:
  enum class MetricType { kCounter, kGauge };

  // One metric name with its help text and all of its labelled series;
  // exactly one of the two maps is used, according to `type`.
  struct Family {
    std::string help;
    MetricType type;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
  };

  // Returns the family `name`, creating it when absent. CHECK-fails when the
  // name is invalid or registered with another type.
  Family& GetFamily(std::string_view name, std::string_view help,
                    MetricType type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Keyed by metric name; std::less<> allows lookup by string_view.
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_BASE_METRICS_H_

#include "base/metrics.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

TEST(MetricsRegistryTest, RendersExpositionText) {
  MetricsRegistry registry;
  registry
      .GetCounter("petrel_sent_total", "Messages sent.", {{"role", "worker"}})
      ->Increment(3);
  registry
      .GetCounter("petrel_sent_total", "Messages sent.", {{"role", "server"}})
      ->Increment();
  registry.GetGauge("petrel_queue_depth", "Queued messages.")->Set(2.5);
  registry.GetCounter("petrel_joins_total", "Nodes joined.");

  // Families in the order they were registered (prometheus-cpp's), each
  // family's series sorted by labels.
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP petrel_sent_total Messages sent.\n"
            "# TYPE petrel_sent_total counter\n"
            "petrel_sent_total{role=\"server\"} 1\n"
            "petrel_sent_total{role=\"worker\"} 3\n"
            "# HELP petrel_joins_total Nodes joined.\n"
            "# TYPE petrel_joins_total counter\n"
            "petrel_joins_total 0\n"
            "# HELP petrel_queue_depth Queued messages.\n"
            "# TYPE petrel_queue_depth gauge\n"
            "petrel_queue_depth 2.5\n");
}

TEST(MetricsRegistryTest, EmptyRegistryRendersNothing) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.RenderPrometheus(), "");
}

TEST(MetricsRegistryTest, SameSeriesReturnsSamePointer) {
  MetricsRegistry registry;
  Counter* a = registry.GetCounter("c_total", "help", {{"x", "1"}, {"y", "2"}});
  EXPECT_EQ(a,
            registry.GetCounter("c_total", "help", {{"x", "1"}, {"y", "2"}}));
  // Label order does not matter.
  EXPECT_EQ(a,
            registry.GetCounter("c_total", "help", {{"y", "2"}, {"x", "1"}}));
  EXPECT_NE(a,
            registry.GetCounter("c_total", "help", {{"x", "1"}, {"y", "3"}}));
  EXPECT_NE(a, registry.GetCounter("c_total", "help"));

  Gauge* g = registry.GetGauge("g", "help");
  EXPECT_EQ(g, registry.GetGauge("g", "help"));
}

TEST(MetricsRegistryTest, EscapesHelpAndLabelValues) {
  MetricsRegistry registry;
  registry.GetCounter("c_total", "line one\nback\\slash",
                      {{"path", "a\"b\\c\nd"}});
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP c_total line one\\nback\\\\slash\n"
            "# TYPE c_total counter\n"
            "c_total{path=\"a\\\"b\\\\c\\nd\"} 0\n");
}

TEST(MetricsRegistryTest, RendersSpecialGaugeValues) {
  MetricsRegistry registry;
  registry.GetGauge("g", "h", {{"k", "nan"}})
      ->Set(std::numeric_limits<double>::quiet_NaN());
  registry.GetGauge("g", "h", {{"k", "pinf"}})
      ->Set(std::numeric_limits<double>::infinity());
  registry.GetGauge("g", "h", {{"k", "ninf"}})
      ->Set(-std::numeric_limits<double>::infinity());
  registry.GetGauge("g", "h", {{"k", "tenth"}})->Set(0.1);
  registry.GetGauge("g", "h", {{"k", "big"}})->Set(1e20);
  const std::string text = registry.RenderPrometheus();
  // prometheus-cpp writes "Nan"; Prometheus parses it case-insensitively.
  EXPECT_THAT(text, HasSubstr("g{k=\"nan\"} Nan\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"pinf\"} +Inf\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"ninf\"} -Inf\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"tenth\"} 0.1\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"big\"} 1e+20\n"));
}

TEST(MetricsRegistryTest, GaugeSetAndAdd) {
  MetricsRegistry registry;
  Gauge* g = registry.GetGauge("g", "h");
  g->Set(10);
  g->Add(-2.5);
  EXPECT_DOUBLE_EQ(g->value(), 7.5);
}

TEST(MetricsRegistryTest, ValueFindsSeries) {
  MetricsRegistry registry;
  registry.GetCounter("c_total", "h", {{"a", "1"}, {"b", "2"}})->Increment(7);
  registry.GetGauge("g", "h")->Set(-1.5);

  absl::StatusOr<double> c =
      registry.Value("c_total", {{"b", "2"}, {"a", "1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, 7.0);
  absl::StatusOr<double> g = registry.Value("g");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, -1.5);
}

TEST(MetricsRegistryTest, ValueReturnsNotFoundForUnknownSeries) {
  MetricsRegistry registry;
  registry.GetCounter("c_total", "h", {{"a", "1"}});
  EXPECT_EQ(registry.Value("nope").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.Value("c_total").status().code(),
            absl::StatusCode::kNotFound);
  absl::Status status = registry.Value("c_total", {{"a", "2"}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("c_total{a=\"2\"}"));
  // Names that would CHECK-fail on registration are just not found here.
  EXPECT_EQ(registry.Value("9 bad", {{"__x", ""}}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(MetricsRegistryTest, ConcurrentIncrementsSumExactly) {
  MetricsRegistry registry;
  constexpr int kThreads = 8;
  constexpr int kIncrements = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, t] {
      for (int i = 0; i < kIncrements; ++i) {
        // Look the series up now and then to race registration too.
        if (i % 1000 == 0) {
          registry.GetCounter("c_total", "h", {{"thread", std::to_string(t)}});
        }
        registry.GetCounter("c_total", "h")->Increment();
        registry.GetGauge("g", "h")->Add(1.0);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(registry.GetCounter("c_total", "h")->value(),
            int64_t{kThreads} * kIncrements);
  EXPECT_EQ(registry.GetGauge("g", "h")->value(),
            static_cast<double>(kThreads) * kIncrements);
  EXPECT_THAT(registry.RenderPrometheus(),
              HasSubstr("c_total{thread=\"7\"} 0\n"));
}

TEST(MetricsRegistryTest, ConcurrentIncrementsOnHeldPointerSumExactly) {
  MetricsRegistry registry;
  Counter* counter = registry.GetCounter("c_total", "h");
  constexpr int kThreads = 4;
  constexpr int kIncrements = 1000000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([counter] {
      for (int i = 0; i < kIncrements; ++i) counter->Increment(2);
    });
  }
  // Render while the writers run; it must neither block them nor crash.
  for (int i = 0; i < 100; ++i) registry.RenderPrometheus();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter->value(), int64_t{2} * kThreads * kIncrements);
}

TEST(MetricsRegistryTest, HistogramRendersBucketsSumAndCount) {
  MetricsRegistry registry;
  Histogram* h = registry.GetHistogram("petrel_op_seconds", "Op latency.",
                                       {0.1, 1.0}, {{"op", "push"}});
  EXPECT_EQ(h, registry.GetHistogram("petrel_op_seconds", "Op latency.",
                                     {0.1, 1.0}, {{"op", "push"}}));
  h->Observe(0.05);
  h->Observe(0.5);
  h->Observe(5);
  EXPECT_EQ(h->count(), 3u);
  EXPECT_DOUBLE_EQ(h->sum(), 5.55);
  EXPECT_EQ(*registry.Value("petrel_op_seconds", {{"op", "push"}}), 3);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE petrel_op_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("petrel_op_seconds_count{op=\"push\"} 3\n"));
  EXPECT_THAT(
      text, HasSubstr("petrel_op_seconds_bucket{op=\"push\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("petrel_op_seconds_bucket{op=\"push\",le=\"1\"} 2\n"));
  EXPECT_THAT(
      text, HasSubstr("petrel_op_seconds_bucket{op=\"push\",le=\"+Inf\"} 3\n"));
}

TEST(MetricsRegistryTest, SeriesListsEveryLabelledValue) {
  MetricsRegistry registry;
  registry.GetGauge("rows", "h", {{"table", "b"}})->Set(2);
  registry.GetGauge("rows", "h", {{"table", "a"}})->Set(1);
  const auto series = registry.Series("rows");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].first, (MetricLabels{{"table", "a"}}));
  EXPECT_EQ(series[0].second, 1);
  EXPECT_EQ(series[1].second, 2);
  EXPECT_TRUE(registry.Series("missing").empty());
}

TEST(MetricsRegistryDeathTest, RejectsBadMetricName) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.GetCounter("1starts_with_digit", "h"),
               "invalid metric name");
  EXPECT_DEATH(registry.GetGauge("has-dash", "h"), "invalid metric name");
  EXPECT_DEATH(registry.GetGauge("", "h"), "invalid metric name");
}

TEST(MetricsRegistryDeathTest, RejectsBadLabelName) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.GetCounter("c", "h", {{"a:b", "v"}}),
               "invalid label name");
  EXPECT_DEATH(registry.GetCounter("c", "h", {{"__reserved", "v"}}),
               "invalid label name");
  EXPECT_DEATH(registry.GetCounter("c", "h", {{"a", "1"}, {"a", "2"}}),
               "duplicate label name");
}

TEST(MetricsRegistryDeathTest, RejectsTypeConflict) {
  MetricsRegistry registry;
  registry.GetCounter("m", "h");
  EXPECT_DEATH(registry.GetGauge("m", "h"), "already registered as a counter");
}

TEST(MetricsRegistryTest, AcceptsColonsAndUnderscores) {
  MetricsRegistry registry;
  registry.GetCounter("_petrel:sub_system:x_total", "h", {{"_l1", "v"}});
  EXPECT_TRUE(
      registry.Value("_petrel:sub_system:x_total", {{"_l1", "v"}}).ok());
}

}  // namespace
}  // namespace petrel

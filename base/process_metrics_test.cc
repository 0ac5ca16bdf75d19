#include "base/process_metrics.h"

#include <cstdlib>
#include <ctime>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/metrics.h"

namespace petrel {
namespace {

// The value of the unlabelled sample `name` in `text`, or -1.
double Sample(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + name.size() + 2, nullptr);
}

TEST(ProcessMetricsTest, ReportsThisProcess) {
  MetricsRegistry registry;
  registry.AddCollectable(NewProcessMetrics());
  const std::string before = registry.RenderPrometheus();
  EXPECT_THAT(before,
              ::testing::HasSubstr("# TYPE process_cpu_seconds_total counter"));
  EXPECT_GT(Sample(before, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(Sample(before, "process_virtual_memory_bytes"), 1 << 20);
  EXPECT_GE(Sample(before, "process_threads"), 1);
  EXPECT_GE(Sample(before, "process_cpu_seconds_total"), 0);
  const double start = Sample(before, "process_start_time_seconds");
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_GT(start, now - 3600);
  EXPECT_LE(start, now + 1);
  EXPECT_GE(Sample(before, "process_max_fds"), 64);

  // An fd opened shows up in the next collection.
  const int fd = open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  const double open_fds =
      Sample(registry.RenderPrometheus(), "process_open_fds");
  EXPECT_EQ(open_fds, Sample(before, "process_open_fds") + 1);
  close(fd);
}

}  // namespace
}  // namespace petrel

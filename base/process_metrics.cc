#include "base/process_metrics.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "prometheus/client_metric.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace petrel {
namespace {

// The fields of /proc/self/stat that matter here.
struct ProcStat {
  double cpu_seconds = 0;
  double start_ticks = 0;  // clock ticks after boot
  double virtual_bytes = 0;
  double resident_pages = 0;
  double threads = 0;
};

double ToDouble(const std::string& s) {
  return std::strtod(s.c_str(), nullptr);
}

bool ReadProcStat(ProcStat* out) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  // The command name (field 2) may hold spaces; fields restart after ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string s; rest >> s;) f.push_back(s);
  if (f.size() < 22) return false;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  out->cpu_seconds = (ToDouble(f[11]) + ToDouble(f[12])) / ticks;
  out->threads = ToDouble(f[17]);
  out->start_ticks = ToDouble(f[19]);
  out->virtual_bytes = ToDouble(f[20]);
  out->resident_pages = ToDouble(f[21]);
  return true;
}

// Seconds since the epoch at boot ("btime" of /proc/stat), or -1.
double BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = -1;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

int OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the directory stream's own fd
}

prometheus::MetricFamily One(const char* name, const char* help,
                             prometheus::MetricType type, double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(metric);
  return family;
}

class ProcessMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> out;
    ProcStat stat;
    if (ReadProcStat(&stat)) {
      out.push_back(One("process_cpu_seconds_total",
                        "User and system CPU time spent, in seconds.",
                        MetricType::Counter, stat.cpu_seconds));
      out.push_back(One(
          "process_resident_memory_bytes", "Resident memory size in bytes.",
          MetricType::Gauge,
          stat.resident_pages * static_cast<double>(sysconf(_SC_PAGESIZE))));
      out.push_back(One("process_virtual_memory_bytes",
                        "Virtual memory size in bytes.", MetricType::Gauge,
                        stat.virtual_bytes));
      out.push_back(One("process_threads", "Threads of the process.",
                        MetricType::Gauge, stat.threads));
      if (const double boot = BootTime(); boot >= 0) {
        out.push_back(
            One("process_start_time_seconds",
                "Start time of the process since the Unix epoch, in seconds.",
                MetricType::Gauge,
                boot + stat.start_ticks /
                           static_cast<double>(sysconf(_SC_CLK_TCK))));
      }
    }
    if (const int fds = OpenFds(); fds >= 0) {
      out.push_back(One("process_open_fds", "Open file descriptors.",
                        MetricType::Gauge, fds));
    }
    rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      out.push_back(
          One("process_max_fds", "Most open file descriptors (soft limit).",
              MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<prometheus::Collectable> NewProcessMetrics() {
  return std::make_shared<ProcessMetrics>();
}

}  // namespace petrel

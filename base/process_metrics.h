// The standard process metrics of Prometheus clients, which prometheus-cpp
// does not provide: read from /proc at each scrape.
//
//   process_cpu_seconds_total       user + system CPU time (counter)
//   process_resident_memory_bytes   resident set size (gauge)
//   process_virtual_memory_bytes    virtual memory size (gauge)
//   process_open_fds                open file descriptors (gauge)
//   process_max_fds                 the soft RLIMIT_NOFILE (gauge)
//   process_start_time_seconds      start, seconds since the epoch (gauge)
//   process_threads                 threads of the process (gauge)
//
// Thread safety: the collectable may be collected from any thread.
#ifndef PETREL_BASE_PROCESS_METRICS_H_
#define PETREL_BASE_PROCESS_METRICS_H_

#include <memory>

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace petrel {

// A collectable for MetricsRegistry::AddCollectable. A value /proc cannot
// give (not Linux, a read error) is left out of the scrape.
std::shared_ptr<prometheus::Collectable> NewProcessMetrics();

}  // namespace petrel

#endif  // PETREL_BASE_PROCESS_METRICS_H_

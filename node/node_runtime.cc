#include "node/node_runtime.h"

#include <cstdio>

#include <malloc.h>
#include <sys/resource.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/build_info.h"
#include "base/net_util.h"
#include "base/out_of_job.h"
#include "base/process_metrics.h"
#include "base/status_macros.h"
#include "van/zmq_van.h"

namespace petrel {
namespace {

const char* RoleName(pb::Role role) {
  switch (role) {
    case pb::ROLE_SCHEDULER:
      return "scheduler";
    case pb::ROLE_SERVER:
      return "server";
    default:
      return "worker";
  }
}

void ExportBuildInfo(MetricsRegistry* metrics) {
  const BuildInfo build = GetBuildInfo();
  metrics
      ->GetGauge("petrel_build_info",
                 "Always 1; the labels say which Petrel build runs.",
                 {{"version", std::string(build.version)},
                  {"commit", std::string(build.git_commit)},
                  {"cuda", build.cuda ? "true" : "false"}})
      ->Set(1);
}

}  // namespace

std::string MetricsBindHost(const NodeSettings& settings) {
  if (!settings.metrics_bind.empty()) return settings.metrics_bind;
  if (!settings.postoffice.advertise_host.empty()) {
    return settings.postoffice.advertise_host;
  }
  if (settings.van.bind_host != "0.0.0.0" && !settings.van.bind_host.empty()) {
    return settings.van.bind_host;
  }
  if (settings.postoffice.role != pb::ROLE_SCHEDULER) {
    absl::StatusOr<std::string> local =
        LocalAddressTowards(settings.postoffice.scheduler_host);
    if (local.ok()) return *local;
  }
  return "127.0.0.1";
}

NodeRuntime::NodeRuntime(const NodeSettings& settings)
    : settings_(settings), metrics_server_(&metrics_, settings.metrics_http) {
  metrics_.AddCollectable(NewProcessMetrics());
  ExportBuildInfo(&metrics_);
  postoffice_ = std::make_unique<Postoffice>(
      settings_.postoffice, std::make_unique<ZmqVan>(settings_.van, &metrics_),
      &metrics_);
}

NodeRuntime::~NodeRuntime() { Stop(); }

int NodeRuntime::metrics_port() const {
  return settings_.metrics_port < 0 ? -1 : metrics_server_.port();
}

absl::Status NodeRuntime::Start() {
  if (settings_.metrics_port >= 0) {
    metrics_host_ = MetricsBindHost(settings_);
    PETREL_RETURN_IF_ERROR(
        Annotate(metrics_server_.Start(metrics_host_, settings_.metrics_port),
                 "metrics endpoint"));
  }
  const char* role = RoleName(settings_.postoffice.role);
  if (!settings_.van.curve.enabled() && settings_.warn_open_cluster) {
    LOG(WARNING) << role << ": the cluster is open (unauthenticated, "
                 << "unencrypted): anyone who can reach its ports can join "
                 << "and read or change its traffic; configure CURVE keys "
                 << "(docs/security.md) on a shared network";
  }
  if (postoffice_->is_scheduler()) {
    PETREL_RETURN_IF_ERROR(postoffice_->Start());
    std::printf(
        "PETREL_LISTEN role=%s host=%s port=%d metrics_port=%d "
        "metrics_host=%s\n",
        role, postoffice_->advertise_host().c_str(), postoffice_->port(),
        metrics_port(), metrics_host_.c_str());
  } else {
    PETREL_RETURN_IF_ERROR(postoffice_->Start());
    std::printf(
        "PETREL_READY role=%s id=%d rank=%d host=%s port=%d "
        "metrics_port=%d metrics_host=%s\n",
        role, postoffice_->my_id(), postoffice_->my_rank(),
        postoffice_->advertise_host().c_str(), postoffice_->port(),
        metrics_port(), metrics_host_.c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

void NodeRuntime::Stop() {
  postoffice_->Stop();
  metrics_server_.Stop();
}

void TuneAllocatorForLargeMessages() {
  // Large message buffers are allocated by ZeroMQ's I/O thread and freed by
  // whichever thread drops the last Buffer. Without these settings glibc
  // maps each one afresh (mmap, page faults on every byte, munmap): a
  // non-main arena is a heap of at most 64 MiB, so a bigger block is always
  // mapped, and M_MMAP_THRESHOLD cannot be raised above 32 MiB (mallopt
  // rejects larger values). So: one arena (the sbrk heap, which can hold
  // blocks of any size), no mmap at all, and freed memory at the top of the
  // heap kept up to 1 GiB, so that the next message reuses pages that are
  // already mapped.
  struct Setting {
    int param;
    int value;
    const char* name;
  };
  const Setting settings[] = {{M_ARENA_MAX, 1, "M_ARENA_MAX"},
                              {M_MMAP_MAX, 0, "M_MMAP_MAX"},
                              {M_TRIM_THRESHOLD, 1 << 30, "M_TRIM_THRESHOLD"},
                              {M_TOP_PAD, 64 << 20, "M_TOP_PAD"}};
  for (const Setting& s : settings) {
    if (mallopt(s.param, s.value) != 1) {
      LOG(WARNING) << "mallopt(" << s.name << ", " << s.value
                   << ") failed; large messages may be slower";
    }
  }
}

int ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return 0;
  if (IsOutOfJob(status)) return kExitOutOfJob;
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace petrel

#include "van/node_runtime.h"

#include <cstdio>

#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

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

}  // namespace

NodeRuntime::NodeRuntime(const NodeSettings& settings)
    : settings_(settings), metrics_server_(&metrics_) {
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
    PETREL_RETURN_IF_ERROR(Annotate(
        metrics_server_.Start(settings_.van.bind_host, settings_.metrics_port),
        "metrics endpoint"));
  }
  const char* role = RoleName(settings_.postoffice.role);
  if (!settings_.van.curve.enabled()) {
    LOG(WARNING) << role << ": the cluster is open (unauthenticated, "
                 << "unencrypted): anyone who can reach its ports can join "
                 << "and read or change its traffic; configure CURVE keys "
                 << "(docs/security.md) on a shared network";
  }
  if (postoffice_->is_scheduler()) {
    PETREL_RETURN_IF_ERROR(postoffice_->Start());
    std::printf("PETREL_LISTEN role=%s host=%s port=%d metrics_port=%d\n", role,
                postoffice_->advertise_host().c_str(), postoffice_->port(),
                metrics_port());
  } else {
    PETREL_RETURN_IF_ERROR(postoffice_->Start());
    std::printf(
        "PETREL_READY role=%s id=%d rank=%d host=%s port=%d "
        "metrics_port=%d\n",
        role, postoffice_->my_id(), postoffice_->my_rank(),
        postoffice_->advertise_host().c_str(), postoffice_->port(),
        metrics_port());
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
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace petrel

#include "tests/harness/local_cluster.h"

#include <memory>
#include <string>
#include <utility>

namespace petrel {
namespace {

class SchedulerControl : public ClusterControl {
 public:
  SchedulerControl(Postoffice* postoffice, const SchedulerOptions& options)
      : scheduler_(postoffice, options) {}
  absl::Status Run() override { return scheduler_.Run(); }
  void Interrupt(const std::string& reason) override {
    scheduler_.Interrupt(reason);
  }
  Scheduler* scheduler() { return &scheduler_; }

 private:
  Scheduler scheduler_;
};

VanClusterOptions WithScheduler(LocalClusterOptions options) {
  SchedulerOptions so = options.scheduler;
  so.join_timeout = options.join_timeout;
  VanClusterOptions o = std::move(options);
  o.control_factory = [so](Postoffice* postoffice) {
    return std::make_unique<SchedulerControl>(postoffice, so);
  };
  return o;
}

}  // namespace

LocalCluster::LocalCluster(LocalClusterOptions options)
    : VanCluster(WithScheduler(std::move(options))) {}

Scheduler* LocalCluster::scheduler_logic() {
  return static_cast<SchedulerControl*>(control())->scheduler();
}

}  // namespace petrel

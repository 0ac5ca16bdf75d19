#include "tools/launch/slurm_launch.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Env = std::map<std::string, std::string>;

absl::StatusOr<SlurmTask> FromEnv(const Env& env) {
  return SlurmTaskFromEnv([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

Env StepEnv(int proc_id) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_NTASKS", "5"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(proc_id)},
          {"SLURM_STEP_NODELIST", "node[07-08]"},
          {"SLURM_JOB_NODELIST", "node[01-09]"}};
}

Launcher::Options JobOptions() {
  Launcher::Options options;
  options.num_servers = 2;
  options.num_workers = 0;
  options.bin_dir = "/opt/petrel/bin";
  options.command = {"/opt/petrel/bin/petrel-worker", "--job=train"};
  options.server_args = {"--config=job.textproto"};
  options.scheduler_args = {"--config=job.textproto"};
  return options;
}

TEST(SlurmLaunchTest, ReadsTheTaskFromTheEnvironment) {
  absl::StatusOr<SlurmTask> task = FromEnv(StepEnv(3));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_TRUE(task->in_step);
  EXPECT_EQ(task->proc_id, 3);
  EXPECT_EQ(task->num_tasks, 5);
  EXPECT_EQ(task->job_id, 1234);
  EXPECT_THAT(task->hosts, ElementsAre("node07", "node08"));
  EXPECT_EQ(task->node_name, "");
  EXPECT_EQ(SlurmSchedulerPort(*task, 0), 21234);
  EXPECT_EQ(SlurmSchedulerPort(*task, 5555), 5555);
}

TEST(SlurmLaunchTest, BatchScriptIsNotInAStep) {
  Env env = StepEnv(0);
  env.erase("SLURM_STEP_ID");
  env.erase("SLURM_STEP_NODELIST");
  absl::StatusOr<SlurmTask> task = FromEnv(env);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_FALSE(task->in_step);
  EXPECT_EQ(task->hosts.size(), 9u);
}

TEST(SlurmLaunchTest, MissingOrBadVariablesAreNamed) {
  EXPECT_THAT(FromEnv({}).status().message(), HasSubstr("SLURM_JOB_ID"));
  Env env = StepEnv(0);
  env.erase("SLURM_NTASKS");
  EXPECT_THAT(FromEnv(env).status().message(), HasSubstr("--ntasks"));
  env = StepEnv(7);
  EXPECT_THAT(FromEnv(env).status().message(), HasSubstr("SLURM_PROCID=7"));
  env = StepEnv(0);
  env["SLURM_NTASKS"] = "five";
  EXPECT_THAT(FromEnv(env).status().message(), HasSubstr("SLURM_NTASKS=five"));
  env = StepEnv(0);
  env["SLURM_STEP_NODELIST"] = "node[1-";
  EXPECT_THAT(FromEnv(env).status().message(),
              HasSubstr("SLURM_STEP_NODELIST"));
}

TEST(SlurmLaunchTest, TaskZeroIsTheSchedulerOnTheFirstHost) {
  absl::StatusOr<SlurmTask> task = FromEnv(StepEnv(0));
  ASSERT_TRUE(task.ok());
  absl::StatusOr<ExecSpec> spec = SlurmTaskSpec(*task, JobOptions(), 6000);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->role, "scheduler");
  EXPECT_THAT(spec->argv,
              ElementsAre("/opt/petrel/bin/petrel-scheduler", "--port=6000",
                          "--num_servers=2", "--num_workers=2",
                          "--advertise_host=node07", "--config=job.textproto"));
}

TEST(SlurmLaunchTest, ThenServersThenWorkers) {
  absl::StatusOr<ExecSpec> server =
      SlurmTaskSpec(*FromEnv(StepEnv(2)), JobOptions(), 6000);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->role, "server 1");
  EXPECT_THAT(
      server->argv,
      ElementsAre("/opt/petrel/bin/petrel-server", "--scheduler=node07:6000",
                  "--port=0", "--rank=1", "--num_servers=2", "--num_workers=2",
                  "--config=job.textproto"));
  absl::StatusOr<ExecSpec> worker =
      SlurmTaskSpec(*FromEnv(StepEnv(4)), JobOptions(), 6000);
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(worker->role, "worker 1");
  EXPECT_EQ(worker->argv, JobOptions().command);
  EXPECT_THAT(worker->env, Contains(Pair("PETREL_RANK", "1")));
  EXPECT_THAT(worker->env, Contains(Pair("DMLC_PS_ROOT_URI", "node07")));
  EXPECT_THAT(worker->env, Contains(Pair("DMLC_PS_ROOT_PORT", "6000")));
  EXPECT_THAT(worker->env, Contains(Pair("DMLC_NUM_WORKER", "2")));
  EXPECT_THAT(worker->env, Contains(Pair("PETREL_SCHEDULER", "node07:6000")));
}

TEST(SlurmLaunchTest, TaskCountMustMatchTheJob) {
  Launcher::Options options = JobOptions();
  options.num_workers = 3;  // 1 + 2 + 3 = 6, the step has 5
  absl::StatusOr<ExecSpec> spec =
      SlurmTaskSpec(*FromEnv(StepEnv(0)), options, 6000);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("has 5 tasks"));
  EXPECT_THAT(spec.status().message(), HasSubstr("--ntasks=6"));
  options = JobOptions();
  options.num_servers = 4;  // leaves no worker
  spec = SlurmTaskSpec(*FromEnv(StepEnv(0)), options, 6000);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("--ntasks=6"));
}

TEST(SlurmLaunchTest, FreeTcpPortIsAPort) {
  absl::StatusOr<int> port = FreeTcpPort();
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_LE(*port, 65535);
}

TEST(SlurmLaunchTest, SrunRunsItselfOncePerTask) {
  EXPECT_THAT(
      SrunArgv("/bin/petrel-launch", 6000, {"--slurm", "--", "./w", "--x"}),
      ElementsAre("srun", "--kill-on-bad-exit=1", "--label",
                  "/bin/petrel-launch", "--scheduler_port=6000", "--slurm",
                  "--", "./w", "--x"));
}

}  // namespace
}  // namespace petrel

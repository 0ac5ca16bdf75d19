// Observability of a live job (issue 15): each daemon's /metrics (served by
// prometheus-cpp) has the documented metrics with their types, rejection
// counters from the start, build and process metrics; /healthz answers;
// petrelctl status/tables/checkpoint/stop work against the scheduler (and
// refuse a wrong token, drain and add-server); every metric the Grafana
// dashboard queries exists on the cluster.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(60);

// Runs petrelctl with `args` to its end (it has its own --timeout_s).
ProgramRun Petrelctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::string(PETREL_BIN_DIR) + "/petrelctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunToEnd(std::move(argv), absl::Seconds(30));
}

// The metric families `text` declares ("# TYPE name type"), name -> type.
std::map<std::string, std::string> Types(const std::string& text) {
  std::map<std::string, std::string> types;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string hash, kw, name, type;
    if (words >> hash >> kw >> name >> type && hash == "#" && kw == "TYPE") {
      types[name] = type;
    }
  }
  return types;
}

class ObservabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "petrel_observability_test_",
                        getpid());
    std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
    ASSERT_TRUE(GenerateLrData(PETREL_BIN_DIR, dir_, 4000, kTimeout).ok());
    config_ = dir_ + "/job.textproto";
    // Many epochs: the job runs until the test stops it with petrelctl.
    std::ofstream(config_)
        << LrJobText(dir_, 1, 2)
        << "train { batch_size: 100 epochs: 100000 "
           "progress_interval_s: 100 eval_every_batches: 5 }\n"
        << "checkpoint { dir: \"" << dir_ << "/ckpt\" }\n";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string dir_;
  std::string config_;
};

TEST_F(ObservabilityTest, MetricsPetrelctlAndDashboardOnLiveJob) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 2;
  o.num_workers = 1;
  o.flags = {"--config=" + config_, "--metrics_port=0",
             "--auth_token=obs-secret"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<Subprocess*> nodes;
  for (int rank = 0; rank < 2; ++rank) {
    auto s =
        cluster.StartNode("petrel-server", {absl::StrCat("--rank=", rank)});
    ASSERT_TRUE(s.ok()) << s.status();
    nodes.push_back(*s);
  }
  auto w =
      cluster.StartNode("petrel-worker", {"--job=train", "--timeout_s=60"});
  ASSERT_TRUE(w.ok()) << w.status();
  nodes.push_back(*w);
  std::vector<int> ports = {cluster.scheduler_announce().metrics_port};
  for (Subprocess* n : nodes) {
    absl::StatusOr<Announce> a = cluster.WaitReady(n);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    ports.push_back(a->metrics_port);
  }
  const int scheduler_port = ports[0], server_port = ports[1],
            worker_port = ports[3];

  // The worker trains, evaluates, and its servers hold rows.
  std::string worker_text;
  for (absl::Time end = absl::Now() + kTimeout; absl::Now() < end;) {
    absl::StatusOr<std::string> t = HttpGet(worker_port, "/metrics");
    ASSERT_TRUE(t.ok()) << t.status();
    worker_text = *t;
    if (SumMetric(worker_text, "petrel_eval_runs_total", "")[""] > 0) break;
    absl::SleepFor(absl::Milliseconds(100));  // polling a live process
  }
  ASSERT_GT(SumMetric(worker_text, "petrel_eval_runs_total", "")[""], 0)
      << worker_text;
  absl::StatusOr<std::string> server_text = HttpGet(server_port, "/metrics");
  absl::StatusOr<std::string> scheduler_text =
      HttpGet(scheduler_port, "/metrics");
  ASSERT_TRUE(server_text.ok() && scheduler_text.ok());
  EXPECT_EQ(*HttpGet(server_port, "/healthz"), "ok");

  const auto worker = Types(worker_text), server = Types(*server_text),
             scheduler = Types(*scheduler_text);
  for (const auto& [name, type] : std::map<std::string, std::string>{
           {"petrel_worker_request_seconds", "histogram"},
           {"petrel_worker_keys_total", "counter"},
           {"petrel_train_examples_total", "counter"},
           {"petrel_train_examples_per_second", "gauge"},
           {"petrel_train_logloss", "gauge"},
           {"petrel_eval_logloss", "gauge"},
           {"petrel_eval_auc", "gauge"},
           {"petrel_train_epoch", "gauge"},
           {"petrel_train_position_examples", "gauge"}}) {
    EXPECT_EQ(worker.count(name) ? worker.at(name) : "", type) << name;
  }
  for (const auto& [name, type] : std::map<std::string, std::string>{
           {"petrel_server_request_seconds", "histogram"},
           {"petrel_table_keys", "gauge"},
           {"petrel_table_memory_bytes", "gauge"},
           {"petrel_table_pushed_keys_total", "counter"},
           {"petrel_table_pulled_bytes_total", "counter"}}) {
    EXPECT_EQ(server.count(name) ? server.at(name) : "", type) << name;
  }
  for (const auto& [name, type] : std::map<std::string, std::string>{
           {"petrel_cluster_nodes", "gauge"},
           {"petrel_cluster_key_range_version", "gauge"},
           {"petrel_scheduler_barriers_total", "counter"},
           {"petrel_scheduler_barrier_waiting_nodes", "gauge"}}) {
    EXPECT_EQ(scheduler.count(name) ? scheduler.at(name) : "", type) << name;
  }
  for (const auto* text : {&worker_text, &*server_text, &*scheduler_text}) {
    const auto types = Types(*text);
    EXPECT_EQ(types.count("process_resident_memory_bytes"), 1u);
    EXPECT_EQ(types.count("process_cpu_seconds_total"), 1u);
    EXPECT_EQ(types.count("process_open_fds"), 1u);
    EXPECT_EQ(types.count("process_start_time_seconds"), 1u);
    EXPECT_THAT(*text, HasSubstr("petrel_build_info{"));
    // Every rejection reason is there from the start, at 0 here.
    EXPECT_THAT(*text, HasSubstr("petrel_van_messages_rejected_total{reason="
                                 "\"permission_denied\"} 0\n"));
  }
  EXPECT_THAT(
      *scheduler_text,
      HasSubstr("petrel_cluster_nodes{role=\"server\",state=\"alive\"} 2"));
  EXPECT_GT(SumMetric(*server_text, "petrel_server_request_seconds_count",
                      "op")["pull"],
            0);

  const std::string at = "--scheduler=" + cluster.scheduler_address();
  // status: every node, alive, with table rows once heartbeats carried them.
  ProgramRun status;
  for (absl::Time end = absl::Now() + kTimeout; absl::Now() < end;) {
    status = Petrelctl({at, "--auth_token=obs-secret", "--json", "status"});
    if (status.code != 0 || absl::StrContains(status.out, "\"rows\"")) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_EQ(status.code, 0) << status.out;
  EXPECT_THAT(status.out, HasSubstr("\"job_state\":\"running\""));
  EXPECT_THAT(status.out, HasSubstr("\"state\":\"alive\""));
  EXPECT_THAT(status.out, HasSubstr("\"rows\""));
  ProgramRun table = Petrelctl({at, "--auth_token=obs-secret", "status"});
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_THAT(table.out, HasSubstr("2/2 servers and 1/1 workers alive"));
  EXPECT_THAT(table.out, HasSubstr("ROLE"));
  EXPECT_THAT(table.out, HasSubstr("server"));
  EXPECT_THAT(table.out, HasSubstr("worker"));
  ProgramRun tables = Petrelctl({at, "--auth_token=obs-secret", "tables"});
  ASSERT_EQ(tables.code, 0) << tables.out;
  EXPECT_THAT(tables.out, HasSubstr("TABLE"));
  EXPECT_THAT(tables.out, HasSubstr("all"));

  // Refusals: a wrong token gets no answer (and is counted); elastic
  // commands say they are not supported; a bad command is a usage error.
  ProgramRun wrong =
      Petrelctl({at, "--auth_token=nope", "--timeout_s=2", "status"});
  EXPECT_EQ(wrong.code, 1) << wrong.out;
  EXPECT_THAT(wrong.out, HasSubstr("no answer from the scheduler"));
  for (absl::Time end = absl::Now() + kTimeout; absl::Now() < end;) {
    auto t = HttpGet(scheduler_port, "/metrics");
    if (t.ok() && absl::StrContains(
                      *t,
                      "petrel_scheduler_admin_requests_total{command=\"any\","
                      "result=\"refused\"} 1")) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_THAT(*HttpGet(scheduler_port, "/metrics"),
              HasSubstr("petrel_scheduler_admin_requests_total{command=\"any\","
                        "result=\"refused\"} 1"));
  ProgramRun drain = Petrelctl({at, "drain"});
  EXPECT_EQ(drain.code, 2);
  EXPECT_THAT(drain.out, HasSubstr("not supported yet"));
  EXPECT_EQ(Petrelctl({at, "frobnicate"}).code, 2);
  EXPECT_EQ(Petrelctl({"status"}).code, 2);

  // Every metric the dashboard queries exists on this cluster.
  std::ifstream dash(std::string(PETREL_SOURCE_DIR) +
                     "/deploy/grafana/petrel-dashboard.json");
  std::stringstream json;
  json << dash.rdbuf();
  std::set<std::string> queried;
  const std::string body = json.str();
  const std::regex name(R"(\b((petrel|process)_[a-z_]+))");
  for (std::sregex_iterator it(body.begin(), body.end(), name), end; it != end;
       ++it) {
    queried.insert((*it)[1]);
  }
  ASSERT_GT(queried.size(), 15u);
  const std::string all = worker_text + *server_text + *scheduler_text;
  for (const std::string& q : queried) {
    EXPECT_TRUE(absl::StrContains(all, "\n" + q + " ") ||
                absl::StrContains(all, "\n" + q + "{"))
        << "the dashboard queries " << q << ", which no daemon exports";
  }

  // checkpoint, then stop: the job checkpoints and ends.
  ProgramRun ckpt = Petrelctl({at, "--auth_token=obs-secret", "checkpoint"});
  ASSERT_EQ(ckpt.code, 0) << ckpt.out;
  absl::StatusOr<std::string> done =
      cluster.scheduler()->WaitForLine("checkpoint 1 (", kTimeout);
  EXPECT_TRUE(done.ok()) << done.status() << cluster.Output();
  ProgramRun stop = Petrelctl({at, "--auth_token=obs-secret", "stop"});
  ASSERT_EQ(stop.code, 0) << stop.out;
  absl::StatusOr<std::map<std::string, int>> codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << cluster.Output();
  EXPECT_THAT(cluster.Output(), HasSubstr("stop requested by petrelctl"));
}

}  // namespace
}  // namespace petrel

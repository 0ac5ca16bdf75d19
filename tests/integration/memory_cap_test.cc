// A server's memory cap over all its tables (docs/memory.md, "Server memory
// cap") with the real daemons: two servers whose two sparse tables take keys
// from two petrel-stream workers (one per table, Zipf streams of 500000
// distinct keys each, in batches of 512 draws), under petrel-server
// --memory_cap_mib=4 (which overrides the config's server.memory_cap_mib).
// Every /metrics sample of every server has its tables' bytes within the cap,
// the tables evict rows, and each server's last lines report them within its
// cap.
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(90);
constexpr double kCapBytes = 4 << 20;

TEST(MemoryCapTest, TwoTablesStayWithinEachServersCapWhileKeysStream) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_memory_cap_test_", getpid());
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  const std::string config = dir + "/job.textproto";
  std::ofstream(config)
      << "model { kind: KIND_FM fm_dim: 8 }\n"
         "tables { id: 0 dim: 1 optimizer { kind: KIND_ADAGRAD } }\n"
         "tables { id: 1 dim: 8 optimizer { kind: KIND_ADAGRAD } }\n"
         "server { memory_cap_mib: 64 }\n";
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 2;
  o.num_workers = 2;
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<Subprocess*> servers;
  for (int rank = 0; rank < 2; ++rank) {
    auto s = cluster.StartNode("petrel-server",
                               {"--config=" + config, "--memory_cap_mib=4",
                                "--server_threads=1", "--metrics_port=0"});
    ASSERT_TRUE(s.ok()) << s.status();
    servers.push_back(*s);
  }
  std::vector<Subprocess*> workers;
  for (int table = 0; table < 2; ++table) {
    auto w = cluster.StartNode(
        "petrel-stream",
        {absl::StrCat("--table=", table), absl::StrCat("--dim=", table ? 8 : 1),
         "--distinct_keys=500000", "--key_space=16777216",
         "--draws_per_batch=512", absl::StrCat("--seed=", table + 1)});
    ASSERT_TRUE(w.ok()) << w.status();
    workers.push_back(*w);
  }
  std::vector<int> ports;
  for (Subprocess* s : servers) {
    absl::StatusOr<Announce> a = cluster.WaitReady(s);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    ports.push_back(a->metrics_port);
  }
  // Sample both servers until the job ends; every sample within the cap.
  int samples = 0;
  std::map<int, std::map<std::string, double>> evicted;  // server, table
  for (absl::Time end = absl::Now() + kTimeout; absl::Now() < end;) {
    bool answered = false;
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::string> text = HttpGet(ports[i], "/metrics");
      if (!text.ok()) continue;  // the job ended
      answered = true;
      const double bytes =
          SumMetric(*text, "petrel_server_table_memory_bytes", "")[""];
      const double cap =
          SumMetric(*text, "petrel_server_memory_cap_bytes", "")[""];
      ASSERT_EQ(cap, kCapBytes);  // the flag overrode the config's 64 MiB
      ASSERT_LE(bytes, cap) << "server " << i;
      // One scrape reads the gauges one after another while requests and
      // share moves update them, so only each gauge alone is bounded: the
      // sum of the two may mix a table before a move with one after it
      // (the final lines below check the shares' sum).
      auto by_table = SumMetric(*text, "petrel_table_memory_bytes", "table");
      ASSERT_LE(by_table["0"], cap);
      ASSERT_LE(by_table["1"], cap);
      evicted[i] = SumMetric(*text, "petrel_table_evicted_total", "table");
      ++samples;
    }
    if (!answered) break;
    absl::SleepFor(absl::Milliseconds(50));  // polling live processes
  }
  auto codes = cluster.WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
  EXPECT_GT(samples, 0);
  for (Subprocess* w : workers) {
    EXPECT_THAT(w->Output(), HasSubstr("stream draws=")) << w->Output();
  }
  // Each server's last lines: both tables evicted rows, each within its
  // share, and the shares within the cap. The shares start in proportion
  // to the tables' bytes per row (2 and 16 floats, plus 16 bytes of
  // tracking: 24 and 80), 4 MiB * 24 / 104 and 4 MiB * 80 / 104 rounded
  // down, and then follow the tables' use (every 1024 requests), never
  // below a floor of 4 MiB / 8.
  const std::regex table_line(
      R"(table (\d) \(optimizer Adagrad\): (\d+) rows, (\d+) bytes \(cap (\d+)\), admitted 0, evicted (\d+))");
  const std::regex all_line(
      R"(all tables: (\d+) bytes \(server cap 4194304\), shares moved (\d+) times)");
  for (Subprocess* s : servers) {
    const std::string out = s->Output();
    std::smatch m;
    std::string rest = out;
    std::map<int, double> caps;
    while (std::regex_search(rest, m, table_line)) {
      const int table = std::stoi(m[1]);
      caps[table] = std::stod(m[4]);
      EXPECT_GT(std::stod(m[5]), 0) << "table " << table << " evicted nothing";
      EXPECT_LE(std::stod(m[3]), std::stod(m[4]));
      EXPECT_GE(caps[table], kCapBytes / 8);
      rest = m.suffix();
    }
    ASSERT_EQ(caps.size(), 2u) << out;
    EXPECT_LE(caps[0] + caps[1], kCapBytes);
    ASSERT_TRUE(std::regex_search(out, m, all_line)) << out;
    EXPECT_LE(std::stod(m[1]), kCapBytes);
    // Each server handled over 1024 requests (batches of 512 draws), and
    // the shares moved from bytes per row to use at least once.
    EXPECT_GE(std::stoi(m[2]), 1) << out;
  }
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace petrel

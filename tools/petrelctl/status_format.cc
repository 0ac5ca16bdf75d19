#include "tools/petrelctl/status_format.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

namespace petrel {
namespace {

using Row = std::vector<std::string>;

// Left-aligned columns two spaces apart.
std::string Table(const std::vector<Row>& rows) {
  std::vector<size_t> width;
  for (const Row& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  std::string out;
  for (const Row& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      absl::StrAppend(&line, r[i]);
      if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 30))
    return absl::StrFormat("%.1f GiB", b / 1073741824.0);
  if (b >= (int64_t{1} << 20))
    return absl::StrFormat("%.1f MiB", b / 1048576.0);
  if (b >= 1024) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

const char* Role(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

std::string JobLine(const pb::AdminReply& reply) {
  int servers = 0, workers = 0;
  for (const pb::NodeStatus& n : reply.nodes()) {
    if (n.state() != "alive" && n.state() != "joining") continue;
    (n.node().role() == pb::ROLE_SERVER ? servers : workers)++;
  }
  return absl::StrCat("job ", reply.job_state(), ": ", servers, "/",
                      reply.num_servers(), " servers and ", workers, "/",
                      reply.num_workers(), " workers alive", "\n");
}

}  // namespace

std::string FormatStatus(const pb::AdminReply& reply) {
  std::vector<Row> rows = {{"ROLE", "RANK", "ID", "HOST", "STATE", "HEARTBEAT",
                            "REQ/S", "TABLES (rows)"}};
  for (const pb::NodeStatus& n : reply.nodes()) {
    std::vector<std::string> tables;
    for (const pb::TableStats& t : n.tables()) {
      tables.push_back(absl::StrCat(t.table(), ":", t.rows()));
    }
    rows.push_back({Role(n.node().role()),
                    n.node().id() == 0 ? "-" : absl::StrCat(n.node().rank()),
                    n.node().id() == 0 ? "-" : absl::StrCat(n.node().id()),
                    absl::StrCat(n.node().host(), ":", n.node().port()),
                    n.state(),
                    n.heartbeat_age_s() < 0
                        ? "-"
                        : absl::StrFormat("%.1fs ago", n.heartbeat_age_s()),
                    absl::StrFormat("%.1f", n.requests_per_s()),
                    tables.empty() ? "-" : absl::StrJoin(tables, " ")});
  }
  return JobLine(reply) + Table(rows);
}

std::string FormatTables(const pb::AdminReply& reply) {
  std::vector<Row> rows = {{"TABLE", "SERVER", "ROWS", "MEMORY"}};
  std::map<std::string, std::pair<int64_t, int64_t>> totals;
  for (const pb::NodeStatus& n : reply.nodes()) {
    for (const pb::TableStats& t : n.tables()) {
      rows.push_back({t.table(), absl::StrCat(n.node().rank()),
                      absl::StrCat(t.rows()), Bytes(t.memory_bytes())});
      totals[t.table()].first += t.rows();
      totals[t.table()].second += t.memory_bytes();
    }
  }
  if (totals.empty())
    return "no tables (servers report them with heartbeats)\n";
  for (const auto& [table, total] : totals) {
    rows.push_back(
        {table, "all", absl::StrCat(total.first), Bytes(total.second)});
  }
  return Table(rows);
}

std::string FormatJson(const pb::AdminReply& reply) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(reply, &json, options)
           .ok()) {
    return "{}\n";
  }
  return json + "\n";
}

}  // namespace petrel

#include "base/metrics_http_server.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Connects to 127.0.0.1:port with 5 s send and receive timeouts, so no test
// can hang on a broken server. Returns the fd, or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `data`, ignoring failures (the server may close first).
void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += n;
  }
}

// Reads until the server closes the connection (or 5 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  return out;
}

// Sends `request` on a fresh connection and returns the whole reply.
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  SendAll(fd, request);
  std::string reply = ReadAll(fd);
  close(fd);
  return reply;
}

std::string Get(int port, const std::string& path) {
  return Exchange(port, absl::StrCat("GET ", path,
                                     " HTTP/1.1\r\nHost: localhost\r\n"
                                     "User-Agent: test\r\n\r\n"));
}

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.GetCounter("petrel_test_total", "A test counter.")->Increment(3);
  }

  MetricsRegistry registry_;
};

TEST_F(MetricsHttpServerTest, ServesMetricsOnFreePort) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  ASSERT_GT(server.port(), 0);
  const std::string reply = Get(server.port(), "/metrics");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("\r\nContent-Type: text/plain"));
  EXPECT_THAT(reply, HasSubstr("\r\nContent-Length: "));
  EXPECT_THAT(reply, HasSubstr("# TYPE petrel_test_total counter\n"
                               "petrel_test_total 3\n"));

  // Served live: a change shows up in the next scrape.
  registry_.GetCounter("petrel_test_total", "A test counter.")->Increment();
  EXPECT_THAT(Get(server.port(), "/metrics?x=1"),
              HasSubstr("\npetrel_test_total 4\n"));
}

TEST_F(MetricsHttpServerTest, ServesHealthz) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const std::string reply = Get(server.port(), "/healthz");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\nok"));
  EXPECT_THAT(Exchange(server.port(), "GET /healthz HTTP/1.0\r\n\r\n"),
              StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(MetricsHttpServerTest, HeadOmitsBody) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const std::string reply =
      Exchange(server.port(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n"));
}

TEST_F(MetricsHttpServerTest, ReturnsNotFoundForUnknownPath) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  EXPECT_THAT(Get(server.port(), "/"), StartsWith("HTTP/1.1 404 Not Found"));
  EXPECT_THAT(Get(server.port(), "/metricsx"), StartsWith("HTTP/1.1 404 "));
}

TEST_F(MetricsHttpServerTest, ReturnsMethodNotAllowedForPost) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const std::string reply =
      Exchange(server.port(), "POST /metrics HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(reply, HasSubstr("\r\nAllow: GET, HEAD\r\n"));
}

// civetweb answers malformed requests with a 4xx/5xx status (HTTP/1.0 or
// 1.1 status lines) or closes the connection; never with the metrics.
TEST_F(MetricsHttpServerTest, ReturnsErrorForGarbage) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  for (const char* request :
       {"garbage\r\n\r\n", "GET /metrics HTTP/9.9\r\n\r\n",
        "GET metrics HTTP/1.1\r\n\r\n", "get /metrics HTTP/1.1\r\n\r\n",
        "\r\n\r\n"}) {
    const std::string reply = Exchange(server.port(), request);
    EXPECT_THAT(reply, Not(HasSubstr("petrel_test_total"))) << request;
    EXPECT_THAT(reply, Not(HasSubstr(" 200 OK"))) << request;
  }
  EXPECT_THAT(Get(server.port(), "/metrics"), HasSubstr("petrel_test_total 3"));
}

TEST_F(MetricsHttpServerTest, RejectsRequestOverSizeLimit) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const std::string request = absl::StrCat(
      "GET /metrics HTTP/1.1\r\nX-Big: ", std::string(9000, 'a'), "\r\n\r\n");
  EXPECT_THAT(Exchange(server.port(), request),
              Not(HasSubstr("petrel_test_total")));
}

TEST_F(MetricsHttpServerTest, SurvivesSilentClient) {
  MetricsHttpServer server(&registry_);  // Default 2 s connection timeout.
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const auto start = std::chrono::steady_clock::now();
  const int silent = Connect(server.port());
  ASSERT_GE(silent, 0);
  const int partial = Connect(server.port());
  ASSERT_GE(partial, 0);
  SendAll(partial, "GET /metr");

  // Others are served at once while those two stall.
  EXPECT_THAT(Get(server.port(), "/metrics"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  // The server closes both once their 2 s are up (the partial request
  // gets a 400 first).
  EXPECT_EQ(ReadAll(silent), "");
  EXPECT_THAT(ReadAll(partial), Not(HasSubstr(" 200 OK")));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(1900));
  EXPECT_LT(elapsed, std::chrono::milliseconds(4500));
  close(silent);
  close(partial);
  EXPECT_THAT(Get(server.port(), "/healthz"), StartsWith("HTTP/1.1 200 OK"));
}

TEST_F(MetricsHttpServerTest, SurvivesHugeGarbage) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::string no_newline(100 * 1024, 'x');
  std::string binary(100 * 1024, '\0');
  for (size_t i = 0; i < binary.size(); ++i) {
    binary[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  for (const std::string& garbage : {no_newline, binary}) {
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    SendAll(fd, garbage);
    EXPECT_THAT(ReadAll(fd), Not(HasSubstr(" 200 OK")));
    close(fd);
    EXPECT_THAT(Get(server.port(), "/metrics"),
                HasSubstr("\npetrel_test_total 3\n"));
  }
}

TEST_F(MetricsHttpServerTest, AnswersClientThatHalfCloses) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /healthz HTTP/1.0\r\n\r\n");
  shutdown(fd, SHUT_WR);
  EXPECT_THAT(ReadAll(fd), EndsWith("\r\n\r\nok"));
  close(fd);
}

TEST_F(MetricsHttpServerTest, ServesManyClientsConcurrently) {
  MetricsHttpServerOptions options;
  options.num_threads = 2;  // Extra clients wait in the accept queue.
  MetricsHttpServer server(&registry_, options);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  constexpr int kThreads = 6;
  constexpr int kRequests = 30;
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequests; ++i) {
        if (Get(server.port(), "/metrics").find("\npetrel_test_total 3\n") !=
            std::string::npos) {
          ++ok[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], kRequests) << t;
}

TEST_F(MetricsHttpServerTest, StartOnPortInUseReturnsUnavailable) {
  MetricsHttpServer first(&registry_);
  ASSERT_TRUE(first.Start("127.0.0.1", 0).ok());
  MetricsHttpServer second(&registry_);
  const absl::Status status = second.Start("127.0.0.1", first.port());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("127.0.0.1:", first.port())));
  EXPECT_THAT(std::string(status.message()), HasSubstr("in use"));
  EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
  // The first server is unaffected, and the second one can bind elsewhere.
  EXPECT_THAT(Get(first.port(), "/healthz"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_TRUE(second.Start("127.0.0.1", 0).ok());
}

TEST_F(MetricsHttpServerTest, RejectsBadArguments) {
  MetricsHttpServer server(&registry_);
  EXPECT_EQ(server.Start("127.0.0.1", -1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server.Start("127.0.0.1", 65536).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  EXPECT_EQ(server.Start("127.0.0.1", 0).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(MetricsHttpServerTest, StopIsPromptIdempotentAndRestartable) {
  MetricsHttpServer server(&registry_);
  server.Stop();  // Before Start: a no-op.
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  auto start = std::chrono::steady_clock::now();
  server.Stop();  // No client: civetweb's 2 s accept poll is cut short.
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(1000));
  server.Stop();
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  EXPECT_THAT(Get(server.port(), "/healthz"), StartsWith("HTTP/1.1 200 OK"));
}

TEST_F(MetricsHttpServerTest, StopWaitsAtMostTheRequestTimeoutForIdleClient) {
  MetricsHttpServerOptions options;
  options.request_timeout = absl::Milliseconds(300);
  MetricsHttpServer server(&registry_, options);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const int idle = Connect(server.port());
  ASSERT_GE(idle, 0);
  const auto start = std::chrono::steady_clock::now();
  server.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(1800));
  EXPECT_EQ(ReadAll(idle), "");
  close(idle);
}

// What a slowloris attack does: many connections that send nothing, or a
// request a byte at a time. Each holds one serving thread until the
// request timeout; with fewer of them than threads, a scrape is answered
// at once.
TEST_F(MetricsHttpServerTest, ManyIdleAndSlowClientsDoNotDelayScrape) {
  MetricsHttpServer server(&registry_);  // 256 threads, 2 s timeout.
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::vector<int> stalled;
  for (int i = 0; i < 200; ++i) {
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0) << i;
    if (i % 2 == 1) SendAll(fd, "GET /metr");
    stalled.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(Get(server.port(), "/metrics"),
                HasSubstr("\npetrel_test_total 3\n"));
    // Wide margin for a loaded machine; a starved endpoint takes >= 2 s
    // (the request timeout) per queued connection batch.
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::milliseconds(1500))
        << "round " << round;
  }
  for (int fd : stalled) close(fd);
}

TEST_F(MetricsHttpServerTest, BindsAllInterfacesWithEmptyHost) {
  MetricsHttpServer server(&registry_);
  ASSERT_TRUE(server.Start("", 0).ok());
  EXPECT_THAT(Get(server.port(), "/healthz"), StartsWith("HTTP/1.1 200 OK"));
}

}  // namespace
}  // namespace petrel

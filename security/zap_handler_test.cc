#include "security/zap_handler.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>
#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "security/curve_keys.h"

namespace petrel {
namespace {

constexpr char kRefused[] = "petrel_van_handshakes_refused_total";

std::string RawKey(const std::string& z85) {
  uint8_t raw[32];
  EXPECT_NE(zmq_z85_decode(raw, z85.c_str()), nullptr);
  return std::string(reinterpret_cast<char*>(raw), 32);
}

TEST(DecideZapTest, AdmitsListedCurveKeysWithTheirRoles) {
  CurveKeyPair listed = NewCurveKeyPair().value();
  AuthorizedKeys keys =
      AuthorizedKeys::Parse(
          absl::StrCat(listed.public_key, " roles=worker,server name=w0"), "ak")
          .value();
  ZapRequest request{"petrel", "127.0.0.1", "CURVE", RawKey(listed.public_key)};
  ZapDecision d = DecideZap(request, keys);
  EXPECT_TRUE(d.admit);
  EXPECT_EQ(d.status_code, "200");
  EXPECT_EQ(d.user_id, listed.public_key);
  EXPECT_EQ(d.roles, "server,worker");
  EXPECT_EQ(d.name, "w0");

  request.client_key = RawKey(NewCurveKeyPair().value().public_key);
  d = DecideZap(request, keys);
  EXPECT_FALSE(d.admit);
  EXPECT_EQ(d.status_code, "400");
  EXPECT_TRUE(d.roles.empty());

  request.client_key = "short";
  EXPECT_FALSE(DecideZap(request, keys).admit);
  ZapRequest plain{"petrel", "127.0.0.1", "NULL", ""};
  EXPECT_FALSE(DecideZap(plain, keys).admit);
}

// A ROUTER that is a CURVE server with a ZapHandler, and clients that
// connect to it, in one ZeroMQ context.
class ZapHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/petrel_zap_testXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/authorized_keys";
    server_ = NewCurveKeyPair().value();
    context_ = zmq_ctx_new();
  }
  void TearDown() override {
    for (void* s : clients_) {
      const int zero = 0;
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
      zmq_close(s);
    }
    if (router_ != nullptr) zmq_close(router_);
    if (zap_ != nullptr) zap_->Stop();
    zmq_ctx_term(context_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // Replaces the file at once (write, then rename), as docs/security.md
  // advises for rotation.
  void WriteKeys(const std::string& text) {
    const std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }
  void StartServer() {
    router_ = zmq_socket(context_, ZMQ_ROUTER);
    ASSERT_TRUE(ConfigureCurveServer(router_, server_).ok());
    zmq_setsockopt(router_, ZMQ_ZAP_DOMAIN, "petrel", 6);
    zap_ = std::make_unique<ZapHandler>(path_, &metrics_);
    ASSERT_TRUE(zap_->Start(context_, router_).ok());
    ASSERT_EQ(zmq_bind(router_, "tcp://127.0.0.1:*"), 0);
    char endpoint[256];
    size_t len = sizeof(endpoint);
    zmq_getsockopt(router_, ZMQ_LAST_ENDPOINT, endpoint, &len);
    endpoint_ = endpoint;
  }
  // A client DEALER that sends "hello"; CURVE with `keys` unless null.
  void Connect(const CurveKeyPair* keys) {
    void* s = zmq_socket(context_, ZMQ_DEALER);
    if (keys != nullptr) {
      ASSERT_TRUE(ConfigureCurveClient(s, *keys, server_.public_key).ok());
    }
    ASSERT_EQ(zmq_connect(s, endpoint_.c_str()), 0);
    zmq_send(s, "hello", 5, ZMQ_DONTWAIT);
    clients_.push_back(s);
  }
  int64_t Refused(const std::string& reason) {
    return metrics_.GetCounter(kRefused, "", {{"reason", reason}})->value();
  }
  // Receives one message's body frame within 10 s; its User-Id and roles.
  bool Receive(std::string* user, std::string* roles) {
    zmq_pollitem_t item = {router_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 10000) != 1) return false;
    zmq_msg_t m;
    zmq_msg_init(&m);
    zmq_msg_recv(&m, router_, 0);  // routing id
    zmq_msg_close(&m);
    zmq_msg_init(&m);
    zmq_msg_recv(&m, router_, 0);
    const char* u = zmq_msg_gets(&m, "User-Id");
    const char* r = zmq_msg_gets(&m, kRolesProperty);
    *user = u == nullptr ? "" : u;
    *roles = r == nullptr ? "" : r;
    zmq_msg_close(&m);
    return true;
  }
  bool Queued() {
    zmq_pollitem_t item = {router_, 0, ZMQ_POLLIN, 0};
    return zmq_poll(&item, 1, 0) == 1;
  }

  std::string dir_;
  std::string path_;
  CurveKeyPair server_;
  MetricsRegistry metrics_;
  void* context_ = nullptr;
  void* router_ = nullptr;
  std::unique_ptr<ZapHandler> zap_;
  std::string endpoint_;
  std::vector<void*> clients_;
};

TEST_F(ZapHandlerTest, StartFailsOnAMissingOrBadFile) {
  ZapHandler missing(path_, &metrics_);
  absl::Status s = missing.Start(context_, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  WriteKeys("garbage\n");
  ZapHandler bad(path_, &metrics_);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.Start(context_, nullptr)));
}

TEST_F(ZapHandlerTest, AdmitsListedKeysOnlyAndCountsRefusals) {
  CurveKeyPair worker = NewCurveKeyPair().value();
  CurveKeyPair stranger = NewCurveKeyPair().value();
  WriteKeys(absl::StrCat(worker.public_key, " roles=worker name=w\n"));
  StartServer();
  EXPECT_EQ(Refused("unknown_key"), 0);
  EXPECT_EQ(Refused("handshake_failed"), 0);

  Connect(&stranger);
  ASSERT_TRUE(WaitUntil([&] { return Refused("unknown_key") >= 1; }));
  Connect(nullptr);  // plaintext
  ASSERT_TRUE(WaitUntil([&] { return Refused("handshake_failed") >= 1; }));
  EXPECT_FALSE(Queued());  // nothing of theirs arrived

  Connect(&worker);
  std::string user, roles;
  ASSERT_TRUE(Receive(&user, &roles));
  EXPECT_EQ(user, worker.public_key);
  EXPECT_EQ(roles, "worker");
  EXPECT_FALSE(Queued());
}

TEST_F(ZapHandlerTest, RereadsTheFileWhenItChanges) {
  CurveKeyPair old_key = NewCurveKeyPair().value();
  CurveKeyPair new_key = NewCurveKeyPair().value();
  WriteKeys(absl::StrCat(old_key.public_key, " roles=worker\n"));
  StartServer();
  Connect(&new_key);
  ASSERT_TRUE(WaitUntil([&] { return Refused("unknown_key") >= 1; }));

  EXPECT_FALSE(Queued());
  // Add the new key: a new connection with it is admitted. (ZeroMQ gives a
  // refused connection up for good: it does not retry.)
  WriteKeys(absl::StrCat(old_key.public_key, " roles=worker\n",
                         new_key.public_key, " roles=server\n"));
  Connect(&new_key);
  std::string user, roles;
  ASSERT_TRUE(Receive(&user, &roles));
  EXPECT_EQ(user, new_key.public_key);
  EXPECT_EQ(roles, "server");
  EXPECT_GE(zap_->reloads(), 1);

  // Retire the old key: a new connection with it is refused.
  WriteKeys(absl::StrCat(new_key.public_key, " roles=server\n"));
  const int64_t before = Refused("unknown_key");
  Connect(&old_key);
  ASSERT_TRUE(WaitUntil([&] { return Refused("unknown_key") > before; }));
  EXPECT_FALSE(Queued());

  // A file that no longer parses leaves the list in force.
  WriteKeys("broken\n");
  Connect(&new_key);
  ASSERT_TRUE(Receive(&user, &roles));
  EXPECT_EQ(user, new_key.public_key);
  EXPECT_GE(
      metrics_.GetCounter("petrel_van_authorized_keys_reload_errors_total", "")
          ->value(),
      1);
}

}  // namespace
}  // namespace petrel

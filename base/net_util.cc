#include "base/net_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace petrel {

absl::StatusOr<std::string> InterfaceAddress(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return absl::UnavailableError("cannot list network interfaces");
  }
  std::string found;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET ||
        name != a->ifa_name) {
      continue;
    }
    char buf[INET_ADDRSTRLEN];
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    found = inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    break;
  }
  freeifaddrs(list);
  if (found.empty()) {
    return absl::NotFoundError(
        absl::StrCat("interface '", name, "' has no IPv4 address"));
  }
  return found;
}

absl::StatusOr<std::string> LocalAddressTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || res == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve host '", host, "'"));
  }
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  bool ok = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (!ok) {
    return absl::UnavailableError(
        absl::StrCat("no route to host '", host, "'"));
  }
  char buf[INET_ADDRSTRLEN];
  return std::string(inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof(buf)));
}

absl::Status CheckHostResolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (res != nullptr) freeaddrinfo(res);
  if (rc == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("cannot resolve host '", host, "': ", gai_strerror(rc)));
}

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(
    const std::string& address) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not HOST:PORT"));
  }
  return std::pair{address.substr(0, colon), port};
}

}  // namespace petrel

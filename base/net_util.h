// Small network helpers: addresses of interfaces and routes, and parsing of
// HOST:PORT strings.
//
// Thread safety: stateless.
#ifndef PETREL_BASE_NET_UTIL_H_
#define PETREL_BASE_NET_UTIL_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace petrel {

// The IPv4 address of interface `name` (e.g. "eth0"); NotFound otherwise.
absl::StatusOr<std::string> InterfaceAddress(const std::string& name);
// The local IPv4 address this host uses to reach `host` (no packet is sent).
absl::StatusOr<std::string> LocalAddressTowards(const std::string& host);
// OK when `host` (a name or an IPv4 address) resolves to an IPv4 address;
// otherwise InvalidArgument "cannot resolve host 'HOST': REASON". Takes as
// long as the system resolver (seconds at most for a name that does not
// exist).
absl::Status CheckHostResolves(const std::string& host);
// Splits "host:port"; InvalidArgument for anything else.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(
    const std::string& address);

}  // namespace petrel

#endif  // PETREL_BASE_NET_UTIL_H_

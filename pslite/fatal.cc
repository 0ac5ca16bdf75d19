#include "pslite/fatal.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "glog/logging.h"

#include "node/node_runtime.h"

namespace petrel {
namespace pslite {

void Die(const absl::Status& status, std::string_view what) {
  std::fprintf(stderr, "ps: %s: %s\n", std::string(what).c_str(),
               status.ToString().c_str());
  google::FlushLogFiles(google::GLOG_INFO);
  std::fflush(nullptr);
  std::_Exit(ExitCodeFor(status));
}

}  // namespace pslite
}  // namespace petrel

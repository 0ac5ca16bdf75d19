// SimpleApp: command/response messaging between nodes (a head code and a
// string body), as in PS-Lite. Useful for control commands of applications.
//
// Thread safety: thread-safe; handlers run one at a time. See
// docs/threading.md.
#ifndef PETREL_CLUSTER_SIMPLE_APP_H_
#define PETREL_CLUSTER_SIMPLE_APP_H_

#include <functional>
#include <memory>
#include <string>

#include "cluster/customer.h"

namespace petrel {

struct SimpleData {
  int head = 0;
  std::string body;
  int sender = 0;
  int timestamp = 0;
  int customer_id = 0;     // the requesting customer
  bool duplicate = false;  // this request was seen before (a resend)
};

class SimpleApp {
 public:
  using Handler = std::function<void(const SimpleData& data, SimpleApp* app)>;

  // `postoffice` must outlive the app.
  SimpleApp(int app_id, int customer_id, Postoffice* postoffice,
            CustomerOptions options = {});
  // Stops first: the van thread may call the handlers until then.
  ~SimpleApp() { Stop(); }

  // Handlers before Start. The default request handler answers with an
  // empty body; the default response handler does nothing.
  void set_request_handler(Handler h) { request_handler_ = std::move(h); }
  void set_response_handler(Handler h) { response_handler_ = std::move(h); }
  absl::Status Start();
  // Unregisters from the Postoffice: once it returns no handler runs, or
  // will (a request that arrives later is dropped, as for an unknown
  // customer). Idempotent. An owner whose handlers touch its other members
  // calls it in its destructor, before those members go.
  void Stop() { customer_.Stop(); }

  // Sends `head`/`body` to `recipient` (a node or group id); returns the
  // request's timestamp.
  int Request(int head, const std::string& body, int recipient);
  // Answers `request` with `body`.
  absl::Status Response(const SimpleData& request,
                        const std::string& body = "");
  absl::Status Wait(int timestamp,
                    absl::Duration timeout = absl::InfiniteDuration());

  Customer* customer() { return &customer_; }

 private:
  Customer customer_;
  Handler request_handler_;
  Handler response_handler_;
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_SIMPLE_APP_H_

// PS-Lite compatibility (docs/pslite.md): SimpleApp, a head code and a
// string body sent to a node or a group and answered, over Petrel's
// SimpleApp (cluster/simple_app.h). A request to a group that holds this
// node is handled here too, as in PS-Lite.
//
// Thread safety: thread-safe; handlers run one at a time, on the node's
// receive thread.
#ifndef PETREL_PSLITE_INCLUDE_PS_SIMPLE_APP_H_
#define PETREL_PSLITE_INCLUDE_PS_SIMPLE_APP_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"

#include "cluster/simple_app.h"

namespace ps {

using SimpleData = petrel::SimpleData;

class SimpleApp {
 public:
  using Handle = std::function<void(const SimpleData& recved, SimpleApp* app)>;

  // Registers with the process's node (ps::Postoffice::Get()); may come
  // before Start. The default request handle answers with an empty body.
  explicit SimpleApp(int app_id, int customer_id = 0);
  virtual ~SimpleApp();
  SimpleApp(const SimpleApp&) = delete;
  SimpleApp& operator=(const SimpleApp&) = delete;

  // Sends to `recv_id` (a node id, or a group: each node of it, this one
  // included); returns the timestamp to Wait on.
  virtual int Request(int req_head, const std::string& req_body, int recv_id);
  // Waits until every node asked answered. A node that died ends the
  // program with the reason (exit code 1).
  virtual void Wait(int timestamp);
  virtual void Response(const SimpleData& recv_req,
                        const std::string& res_body = "");
  virtual void set_request_handle(const Handle& request_handle);
  virtual void set_response_handle(const Handle& response_handle);

  // Petrel's SimpleApp under this one.
  petrel::SimpleApp* petrel() { return app_.get(); }

 private:
  void OnRequest(const SimpleData& data);
  void OnResponse(const SimpleData& data);

  absl::Mutex mu_;
  // Shared, not copied per message: a handle keeps its state.
  std::shared_ptr<Handle> request_handle_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Handle> response_handle_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<petrel::SimpleApp> app_;
};

}  // namespace ps

#endif  // PETREL_PSLITE_INCLUDE_PS_SIMPLE_APP_H_

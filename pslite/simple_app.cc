#include "ps/simple_app.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "ps/internal/postoffice.h"
#include "pslite/fatal.h"

namespace ps {

SimpleApp::SimpleApp(int app_id, int customer_id)
    : app_(std::make_unique<petrel::SimpleApp>(
          app_id, customer_id, Postoffice::Get()->petrel(customer_id))) {
  app_->set_request_handler(
      [this](const SimpleData& data, petrel::SimpleApp*) { OnRequest(data); });
  app_->set_response_handler(
      [this](const SimpleData& data, petrel::SimpleApp*) { OnResponse(data); });
  petrel::pslite::DieUnlessOk(
      app_->Start(),
      absl::StrCat("SimpleApp(", app_id, ", ", customer_id, ")"));
}

SimpleApp::~SimpleApp() { app_->Stop(); }

int SimpleApp::Request(int req_head, const std::string& req_body, int recv_id) {
  return app_->Request(req_head, req_body, recv_id);
}

void SimpleApp::Wait(int timestamp) {
  petrel::pslite::DieUnlessOk(app_->Wait(timestamp),
                              absl::StrCat("SimpleApp::Wait(", timestamp, ")"));
}

void SimpleApp::Response(const SimpleData& recv_req,
                         const std::string& res_body) {
  absl::Status s = app_->Response(recv_req, res_body);
  LOG_IF_EVERY_N(ERROR, !s.ok(), 100)
      << "ps::SimpleApp::Response to node " << recv_req.sender << ": " << s;
}

void SimpleApp::set_request_handle(const Handle& request_handle) {
  absl::MutexLock lock(&mu_);
  request_handle_ = std::make_shared<Handle>(request_handle);
}

void SimpleApp::set_response_handle(const Handle& response_handle) {
  absl::MutexLock lock(&mu_);
  response_handle_ = std::make_shared<Handle>(response_handle);
}

void SimpleApp::OnRequest(const SimpleData& data) {
  std::shared_ptr<Handle> handle;
  {
    absl::MutexLock lock(&mu_);
    handle = request_handle_;
  }
  if (handle != nullptr && *handle) {
    (*handle)(data, this);
  } else {
    Response(data);
  }
}

void SimpleApp::OnResponse(const SimpleData& data) {
  std::shared_ptr<Handle> handle;
  {
    absl::MutexLock lock(&mu_);
    handle = response_handle_;
  }
  if (handle != nullptr && *handle) (*handle)(data, this);
}

}  // namespace ps

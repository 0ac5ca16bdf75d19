#include "cluster/simple_app.h"

#include "cluster/postoffice.h"

namespace petrel {
namespace {

SimpleData ToSimpleData(const Message& msg, bool duplicate) {
  SimpleData d;
  d.head = msg.meta.head();
  d.body = msg.meta.body();
  d.sender = msg.meta.sender();
  d.timestamp = msg.meta.timestamp();
  d.customer_id = msg.meta.customer_id();
  d.duplicate = duplicate;
  return d;
}

}  // namespace

SimpleApp::SimpleApp(int app_id, int customer_id, Postoffice* postoffice,
                     CustomerOptions options)
    : customer_(app_id, customer_id, postoffice, options) {}

absl::Status SimpleApp::Start() {
  customer_.set_request_handler([this](Message&& msg, bool duplicate) {
    SimpleData d = ToSimpleData(msg, duplicate);
    if (request_handler_) {
      request_handler_(d, this);
    } else {
      Response(d).IgnoreError();
    }
  });
  customer_.set_response_handler([this](Message&& msg) {
    if (response_handler_) response_handler_(ToSimpleData(msg, false), this);
  });
  return customer_.Start();
}

int SimpleApp::Request(int head, const std::string& body, int recipient) {
  std::vector<int> recipients = customer_.postoffice()->GetNodeIds(recipient);
  int ts = customer_.NewRequest(recipients);
  for (int id : recipients) {
    Message msg;
    msg.meta.set_head(head);
    msg.meta.set_body(body);
    msg.meta.set_timestamp(ts);
    msg.meta.set_recipient(id);
    customer_.SendRequest(std::move(msg)).IgnoreError();
  }
  return ts;
}

absl::Status SimpleApp::Response(const SimpleData& request,
                                 const std::string& body) {
  ReplyAddress to;
  to.sender = request.sender;
  to.timestamp = request.timestamp;
  to.customer_id = request.customer_id;
  Message res;
  res.meta.set_head(request.head);
  res.meta.set_body(body);
  return customer_.SendResponse(to, std::move(res));
}

absl::Status SimpleApp::Wait(int timestamp, absl::Duration timeout) {
  return customer_.Wait(timestamp, timeout);
}

}  // namespace petrel

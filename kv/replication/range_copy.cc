#include "kv/replication/range_copy.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"
#include "kv/kv_server.h"
#include "kv/replication/copy_parts.h"

namespace petrel {

template <typename Val>
RangeCopy<Val>::RangeCopy(KVServer<Val>* server, Customer* customer,
                          ServerReplication* replication)
    : server_(server), customer_(customer), replication_(replication) {}

template <typename Val>
absl::Status RangeCopy<Val>::TakeError(int ts) {
  absl::MutexLock lock(&mu_);
  auto it = errors_.find(ts);
  if (it == errors_.end()) return absl::OkStatus();
  absl::Status error = std::move(it->second);
  errors_.erase(it);
  return error;
}

template <typename Val>
void RangeCopy<Val>::OnResponse(const Message& response) {
  if (response.meta.status_code() == 0) return;
  absl::MutexLock lock(&mu_);
  errors_[response.meta.timestamp()] =
      absl::Status(static_cast<absl::StatusCode>(response.meta.status_code()),
                   absl::StrCat("node ", response.meta.sender(), ": ",
                                response.meta.status_message()));
}

template <typename Val>
absl::Status RangeCopy<Val>::CopyFrom(int source,
                                      const std::vector<int>& ranges,
                                      absl::Duration timeout) {
  SArray<Key> wanted(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) wanted[i] = ranges[i];
  Message request;
  KVMeta kv;
  EncodeKvRequest(kv, &request.meta);
  request.AddData(wanted);
  request.meta.set_range_copy(1);
  request.meta.set_recipient(source);
  const int ts = customer_->NewRequest({source});
  request.meta.set_timestamp(ts);
  absl::Status s = customer_->SendRequest(std::move(request));
  if (s.ok()) s = customer_->Wait(ts, timeout);
  absl::Status answered = TakeError(ts);
  if (s.ok()) s = answered;
  return s;
}

template <typename Val>
absl::StatusOr<KVPairs<Val>> RangeCopy<Val>::Snapshot(
    const KVPairs<Val>& ranges) {
  const ReplicaMap map = customer_->postoffice()->replica_map();
  const std::vector<uint64_t>& begins = map.ranges().begins();
  std::vector<bool> wanted(begins.size(), false);
  for (Key r : ranges.keys) {
    if (r >= begins.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("range ", r, " asked of ", begins.size()));
    }
    wanted[r] = true;
  }
  return snapshot_([&](Key key) {
    const uint64_t h = HashKey(key);
    const size_t i =
        std::upper_bound(begins.begin(), begins.end(), h) - begins.begin() - 1;
    return static_cast<bool>(wanted[i]);
  });
}

template <typename Val>
void RangeCopy<Val>::ProcessRequest(const Message& msg, const KVMeta& meta,
                                    const KVPairs<Val>& data, bool duplicate) {
  if (duplicate) return;  // the first one's answer comes with its copy
  const int to = msg.meta.sender();
  Postoffice* po = customer_->postoffice();
  if (!IsServerId(to) || !snapshot_) {
    server_
        ->ResponseError(meta,
                        absl::FailedPreconditionError(
                            !IsServerId(to) ? "only a server takes a range copy"
                                            : "this server's handler has no "
                                              "range copy"))
        .IgnoreError();
    return;
  }
  absl::StatusOr<KVPairs<Val>> rows = Snapshot(data);
  if (!rows.ok()) {
    server_->ResponseError(meta, rows.status()).IgnoreError();
    return;
  }
  // One message per part, at most the van's max_message_bytes of data
  // each; the duplicate-detection state goes with the first. The answer to
  // the copying server waits for every part's.
  const std::vector<KVPairs<Val>> parts =
      SplitCopy(*rows, po->van()->options().limits.max_message_bytes);
  struct Answer {
    absl::Mutex mu;
    size_t left ABSL_GUARDED_BY(mu);
    absl::Status failed ABSL_GUARDED_BY(mu);
  };
  auto answer = std::make_shared<Answer>();
  {
    absl::MutexLock lock(&answer->mu);
    answer->left = parts.size();
  }
  const KVMeta asked = meta;
  // Every push handled after this one goes to the copying server too.
  replication_->AddCopyTarget(to);
  LOG(INFO) << "node " << po->my_id() << ": copying " << data.keys.size()
            << " key range(s), " << rows->keys.size() << " rows in "
            << parts.size() << " message(s), to node " << to
            << "; its pushes are forwarded there from now on";
  for (size_t i = 0; i < parts.size(); ++i) {
    SendPart(to, parts[i], i, parts.size(),
             [this, asked, answer](absl::Status failed) {
               {
                 absl::MutexLock lock(&answer->mu);
                 if (answer->failed.ok()) answer->failed = failed;
                 if (--answer->left > 0) return;
                 failed = answer->failed;
               }
               absl::Status s = failed.ok()
                                    ? server_->Response(asked)
                                    : server_->ResponseError(asked, failed);
               if (!s.ok()) {
                 LOG(WARNING) << "range copy answer: " << s;
               }
             });
  }
}

template <typename Val>
void RangeCopy<Val>::SendPart(int to, const KVPairs<Val>& part, size_t i,
                              size_t n,
                              std::function<void(absl::Status)> done) {
  Message copy;
  KVMeta kv;
  kv.push = true;
  EncodeKvRequest(kv, &copy.meta);
  copy.AddData(part.keys);
  copy.AddData(part.vals);
  copy.AddData(part.lens);
  copy.meta.set_range_copy(2);
  if (i == 0) copy.meta.set_replica_dedup(replication_->dedup().Export());
  copy.meta.set_recipient(to);
  const int ts =
      customer_->NewRequest({to}, [this, done = std::move(done)](int ts) {
        absl::Status failed = customer_->RequestFailure(ts);
        absl::Status answered = TakeError(ts);
        if (failed.ok()) failed = answered;
        done(failed);
      });
  copy.meta.set_timestamp(ts);
  absl::Status s = customer_->SendRequest(std::move(copy));
  if (!s.ok()) {
    LOG(WARNING) << "range copy part " << i + 1 << " of " << n << " to node "
                 << to << ": " << s;
  }
}

template <typename Val>
void RangeCopy<Val>::ProcessCopy(const Message& msg, const KVMeta& meta,
                                 const KVPairs<Val>& data, bool duplicate) {
  if (duplicate) {
    server_->Response(meta).IgnoreError();
    return;
  }
  absl::Status s =
      !IsServerId(msg.meta.sender())
          ? absl::PermissionDeniedError("a range copy from a non-server")
      : !install_ ? absl::FailedPreconditionError(
                        "this server's handler takes no range copy")
                  : replication_->dedup().Import(
                        msg.meta.replica_dedup(),
                        CopiedStreams(msg.meta.sender(),
                                      customer_->postoffice()->replica_map()));
  if (s.ok()) s = install_(data);
  if (!s.ok()) {
    LOG(ERROR) << "range copy from node " << msg.meta.sender() << ": " << s;
    server_->ResponseError(meta, s).IgnoreError();
    return;
  }
  rows_copied_in_.fetch_add(static_cast<int64_t>(data.keys.size()));
  LOG(INFO) << "node " << customer_->postoffice()->my_id() << ": applied "
            << data.keys.size() << " copied rows from node "
            << msg.meta.sender();
  server_->Response(meta).IgnoreError();
}

template class RangeCopy<float>;
template class RangeCopy<double>;
template class RangeCopy<int32_t>;
template class RangeCopy<int64_t>;

}  // namespace petrel

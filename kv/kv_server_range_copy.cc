// KVServer: the copy of key ranges to a replacement server (docs/failures.md,
// "Replacement servers"). The replacement asks each live primary of the
// ranges it is to hold (CopyRangesFrom); the primary takes the request in
// its request order, so the rows it snapshots hold exactly the pushes it
// applied before, sends them with its duplicate-detection state, and from
// then on forwards every push to the replacement as to a backup. Its copy
// and its forwards are requests of one customer to one node, numbered in
// sequence: the replacement applies the copy before any forward.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kv/kv_copy_parts.h"
#include "kv/kv_server.h"
#include "van/postoffice.h"

namespace petrel {

template <typename Val>
absl::Status KVServer<Val>::CopyRangesFrom(int source,
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
  const int ts = customer_.NewRequest({source});
  request.meta.set_timestamp(ts);
  absl::Status s = customer_.SendRequest(std::move(request));
  if (s.ok()) s = customer_.Wait(ts, timeout);
  absl::MutexLock lock(&answers_mu_);
  auto it = copy_errors_.find(ts);
  if (it != copy_errors_.end()) {
    if (s.ok()) s = it->second;
    copy_errors_.erase(it);
  }
  return s;
}

template <typename Val>
void KVServer<Val>::OnResponse(const Message& response) {
  if (response.meta.status_code() == 0) return;
  absl::MutexLock lock(&answers_mu_);
  copy_errors_[response.meta.timestamp()] =
      absl::Status(static_cast<absl::StatusCode>(response.meta.status_code()),
                   absl::StrCat("node ", response.meta.sender(), ": ",
                                response.meta.status_message()));
}

template <typename Val>
void KVServer<Val>::ProcessCopyRequest(const Message& msg, const KVMeta& meta,
                                       const KVPairs<Val>& data,
                                       bool duplicate) {
  if (duplicate) return;  // the first one's answer comes with its copy
  const int to = msg.meta.sender();
  Postoffice* po = customer_.postoffice();
  if (!IsServerId(to) || !snapshot_) {
    ResponseError(meta, absl::FailedPreconditionError(
                            !IsServerId(to) ? "only a server takes a range copy"
                                            : "this server's handler has no "
                                              "range copy"))
        .IgnoreError();
    return;
  }
  const ReplicaMap map = po->replica_map();
  const std::vector<uint64_t>& begins = map.ranges().begins();
  std::vector<bool> wanted(begins.size(), false);
  for (Key r : data.keys) {
    if (r >= begins.size()) {
      ResponseError(meta, absl::InvalidArgumentError(absl::StrCat(
                              "range ", r, " asked of ", begins.size())))
          .IgnoreError();
      return;
    }
    wanted[r] = true;
  }
  KVPairs<Val> rows = snapshot_([&](Key key) {
    const uint64_t h = HashKey(key);
    const size_t i =
        std::upper_bound(begins.begin(), begins.end(), h) - begins.begin() - 1;
    return static_cast<bool>(wanted[i]);
  });
  // One message per part, at most the van's max_message_bytes of data
  // each; the duplicate-detection state goes with the first. The answer to
  // the replacement waits for every part's.
  const std::vector<KVPairs<Val>> parts =
      SplitCopy(rows, po->van()->options().limits.max_message_bytes);
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
  // Every push handled after this one goes to the replacement too.
  if (std::find(copy_targets_.begin(), copy_targets_.end(), to) ==
      copy_targets_.end()) {
    copy_targets_.push_back(to);
  }
  copy_targets_version_ = po->map_version();
  backups_version_ = ~uint64_t{0};
  replicating_.store(true);
  LOG(INFO) << "node " << po->my_id() << ": copying " << data.keys.size()
            << " key range(s), " << rows.keys.size() << " rows in "
            << parts.size() << " message(s), to node " << to
            << "; its pushes are forwarded there from now on";
  for (size_t i = 0; i < parts.size(); ++i) {
    Message copy;
    KVMeta kv;
    kv.push = true;
    EncodeKvRequest(kv, &copy.meta);
    copy.AddData(parts[i].keys);
    copy.AddData(parts[i].vals);
    copy.AddData(parts[i].lens);
    copy.meta.set_range_copy(2);
    if (i == 0) copy.meta.set_replica_dedup(dedup_.Export());
    copy.meta.set_recipient(to);
    const int ts = customer_.NewRequest({to}, [this, asked, answer](int ts) {
      absl::Status failed = customer_.RequestFailure(ts);
      {
        absl::MutexLock lock(&answers_mu_);
        auto it = copy_errors_.find(ts);
        if (it != copy_errors_.end()) {
          if (failed.ok()) failed = it->second;
          copy_errors_.erase(it);
        }
      }
      {
        absl::MutexLock lock(&answer->mu);
        if (answer->failed.ok()) answer->failed = failed;
        if (--answer->left > 0) return;
        failed = answer->failed;
      }
      absl::Status s =
          failed.ok() ? Response(asked) : ResponseError(asked, failed);
      if (!s.ok()) {
        LOG(WARNING) << "range copy answer: " << s;
      }
    });
    copy.meta.set_timestamp(ts);
    absl::Status s = customer_.SendRequest(std::move(copy));
    if (!s.ok()) {
      LOG(WARNING) << "range copy part " << i + 1 << " of " << parts.size()
                   << " to node " << to << ": " << s;
    }
  }
}

template <typename Val>
void KVServer<Val>::ProcessCopy(const Message& msg, const KVMeta& meta,
                                const KVPairs<Val>& data, bool duplicate) {
  if (duplicate) {
    Response(meta).IgnoreError();
    return;
  }
  absl::Status s =
      !IsServerId(msg.meta.sender())
          ? absl::PermissionDeniedError("a range copy from a non-server")
      : !install_
          ? absl::FailedPreconditionError(
                "this server's handler takes no range copy")
          : dedup_.Import(msg.meta.replica_dedup(),
                          CopiedStreams(msg.meta.sender(),
                                        customer_.postoffice()->replica_map()));
  if (s.ok()) s = install_(data);
  if (!s.ok()) {
    LOG(ERROR) << "range copy from node " << msg.meta.sender() << ": " << s;
    ResponseError(meta, s).IgnoreError();
    return;
  }
  rows_copied_in_.fetch_add(static_cast<int64_t>(data.keys.size()));
  LOG(INFO) << "node " << customer_.postoffice()->my_id() << ": applied "
            << data.keys.size() << " copied rows from node "
            << msg.meta.sender();
  Response(meta).IgnoreError();
}

template <typename Val>
void KVStoreHandler<Val>::EnableRangeCopy(KVServer<Val>* server) {
  server->set_range_copy(
      [this](const std::function<bool(Key)>& keep) {
        return store_.Export(keep);
      },
      [this](const KVPairs<Val>& rows) {
        if (store_.mode() != Mode::kSum) {
          return store_.Push(rows.keys, rows.vals, rows.lens);
        }
        // A copy sets the rows: a server that gains a range when another
        // is drained may hold rows of it already (the whole pushes a
        // primary forwards to it for the ranges it backs), so it adds the
        // copy less what it holds.
        SArray<Val> vals(rows.vals.size());
        const size_t n = rows.keys.size();
        const size_t width = n == 0 ? 0 : rows.vals.size() / n;
        size_t at = 0;
        for (size_t i = 0; i < n; ++i) {
          const size_t w =
              rows.lens.empty() ? width : static_cast<size_t>(rows.lens[i]);
          const std::vector<Val> held = store_.Get(rows.keys[i]);
          for (size_t j = 0; j < w; ++j) {
            vals[at + j] =
                rows.vals[at + j] - (held.size() == w ? held[j] : Val{});
          }
          at += w;
        }
        return store_.Push(rows.keys, vals, rows.lens);
      });
}

template class KVServer<float>;
template class KVServer<double>;
template class KVServer<int32_t>;
template class KVServer<int64_t>;
template void KVStoreHandler<float>::EnableRangeCopy(KVServer<float>*);
template void KVStoreHandler<double>::EnableRangeCopy(KVServer<double>*);
template void KVStoreHandler<int32_t>::EnableRangeCopy(KVServer<int32_t>*);
template void KVStoreHandler<int64_t>::EnableRangeCopy(KVServer<int64_t>*);

}  // namespace petrel

// Message: one Petrel message, a protobuf header (Meta) plus raw data frames.
// See docs/wire.md for how it travels.
//
// Thread safety: a Message is a value; distinct Messages may be used from
// different threads. Copies share their data Buffers (zero copy).
#ifndef PETREL_VAN_MESSAGE_H_
#define PETREL_VAN_MESSAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/meta.pb.h"
#include "van/buffer.h"

namespace petrel {

// Node ids and group ids, compatible with PS-Lite: the scheduler is 1, the
// groups are 1 | 2 | 4 combinations, servers are 8 + 2 * rank and workers
// 9 + 2 * rank.
inline constexpr int kEmptyNodeId = 0;
inline constexpr int kSchedulerId = 1;
inline constexpr int kServerGroup = 2;
inline constexpr int kWorkerGroup = 4;
inline constexpr int kSchedulerGroup = 1;
inline constexpr int kAllGroup = kSchedulerGroup | kServerGroup | kWorkerGroup;

inline int ServerRankToId(int rank) { return 8 + 2 * rank; }
inline int WorkerRankToId(int rank) { return 9 + 2 * rank; }
inline int IdToRank(int id) { return id < 8 ? 0 : (id - 8) / 2; }
inline bool IsGroupId(int id) { return id >= 1 && id <= 7; }
inline bool IsServerId(int id) { return id >= 8 && id % 2 == 0; }
inline bool IsWorkerId(int id) { return id >= 9 && id % 2 == 1; }

// Maps a C++ element type to its wire DataType.
template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<uint64_t> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_UINT64;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_INT32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_INT64;
};
template <>
struct DataTypeOf<float> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_FLOAT;
};
template <>
struct DataTypeOf<double> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_DOUBLE;
};
template <>
struct DataTypeOf<char> {
  static constexpr pb::DataType kValue = pb::DATA_TYPE_BYTES;
};

// Size in bytes of one element of `type`; 0 for an unknown type.
size_t DataTypeSize(pb::DataType type);

// Who sent a message, as the transport authenticated it: with CURVE on, the
// connection's public key and the roles the receiver's authorized-keys file
// grants it (security/zap_handler.h); both empty without CURVE.
struct PeerAuth {
  std::string public_key;  // Z85
  std::string roles;       // e.g. "server,worker"
};

struct Message {
  pb::Meta meta;
  std::vector<Buffer> data;  // meta.data_types(i) describes data[i]
  PeerAuth peer;             // set by the receiving van

  template <typename T>
  void AddData(const SArray<T>& array) {
    data.push_back(array.buffer());
    meta.add_data_types(DataTypeOf<T>::kValue);
  }
  // Total bytes of the data frames.
  size_t DataBytes() const;
  // A short human-readable description for logs.
  std::string DebugString() const;
};

}  // namespace petrel

#endif  // PETREL_VAN_MESSAGE_H_

// Key partitioning shared by the scheduler, servers and workers.
//
// Keys are first scrambled with HashKey, a bijective 64-bit mixer, so that
// dense keys 0..N spread over the whole hashed key space. That space,
// [0, 2^64), is cut into contiguous ranges ("virtual nodes"), each owned by
// one server rank. The scheduler builds the map (normally Uniform) and sends
// its begins/owners over the wire; every node rebuilds it with FromRanges and
// asks OwnerOf on each push and pull.

#ifndef PETREL_CLUSTER_KEY_RANGE_MAP_H_
#define PETREL_CLUSTER_KEY_RANGE_MAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace petrel {

// Returns the splitmix64 output for `key`: a bijection on uint64_t (no two
// keys collide) that spreads consecutive keys evenly over [0, 2^64).
// Stable across builds and machines; it is part of the wire contract, since
// every node must map a key to the same range.
uint64_t HashKey(uint64_t key);

// Maps each key to the server rank that owns it. An immutable value type:
// copyable and movable; thread-compatible, and since no method mutates it,
// concurrent const calls are safe.
class KeyRangeMap {
 public:
  // Most ranges a map may have (num_servers * virtual_nodes); keeps the
  // tables small and the arithmetic in range.
  static constexpr int64_t kMaxRanges = int64_t{1} << 20;

  // Splits [0, 2^64) into n = num_servers * virtual_nodes ranges of equal
  // size (to within one), range i owned by server rank i % num_servers.
  // Returns InvalidArgument when num_servers < 1, virtual_nodes < 1 or
  // n > kMaxRanges.
  static absl::StatusOr<KeyRangeMap> Uniform(int num_servers,
                                             int virtual_nodes);

  // Rebuilds a map received from the network. Range i is
  // [begins[i], begins[i + 1]) (the last one ends at 2^64) and is owned by
  // owners[i]. Returns InvalidArgument naming the reason unless
  // num_servers >= 1, begins is non-empty with begins[0] == 0 and strictly
  // increasing, owners.size() == begins.size() <= kMaxRanges, and every owner
  // is in [0, num_servers). A server may own no range.
  static absl::StatusOr<KeyRangeMap> FromRanges(std::vector<uint64_t> begins,
                                                std::vector<int32_t> owners,
                                                int num_servers);

  // Returns the rank in [0, num_servers()) owning HashKey(key). Every key has
  // exactly one owner. O(1) for a uniform map (including one rebuilt by
  // FromRanges from a uniform map's ranges), O(log ranges) otherwise.
  int OwnerOf(uint64_t key) const;

  // OwnerOf(keys[i]) into owners[i] for i in [0, n): a request's partition
  // in one loop, without a call per key.
  void OwnersOf(const uint64_t* keys, size_t n, uint32_t* owners) const;
  // The index of the range holding HashKey(key), in [0, begins().size()).
  // Ranges never change within a job (only their owners and replicas), so
  // an index names the same keys in every map of it.
  size_t RangeOf(uint64_t key) const;

  int num_servers() const { return num_servers_; }
  // Start of each range, sorted; begins()[0] == 0.
  const std::vector<uint64_t>& begins() const { return begins_; }
  // Owner of each range, parallel to begins().
  const std::vector<int32_t>& owners() const { return owners_; }

 private:
  KeyRangeMap(std::vector<uint64_t> begins, std::vector<int32_t> owners,
              int num_servers);

  std::vector<uint64_t> begins_;
  std::vector<int32_t> owners_;
  int num_servers_;
  // True when begins_ are exactly the Uniform split of begins_.size() ranges,
  // so the range of hash h is (h * size) >> 64 with no search.
  bool uniform_;
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_KEY_RANGE_MAP_H_

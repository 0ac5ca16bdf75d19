// Admission files: one server's admission counters of one table in a
// checkpoint (the count-min sketch of server/table.h's admit_after), beside
// the table files, binary and little-endian (docs/checkpoints.md):
//
//   magic "PTRLADM1", format version (uint32, 1), table id (uint32),
//   counter count (uint64), the counters (uint16 each), then the XXH64
//   (seed 0) of all the bytes before it (uint64).
//
// The manifest does not list them (its table files stay one per table per
// server): a checkpoint from before admission files, or of a table without
// admit_after, has none, and its tables load with counters at zero.
//
// Thread safety: free functions without shared state.
#ifndef PETREL_CHECKPOINT_ADMISSION_FILE_H_
#define PETREL_CHECKPOINT_ADMISSION_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace petrel {

// The admission file name of `server_rank`'s share of table `table_id`.
std::string AdmissionFileName(int table_id, int server_rank);

// Writes `counters` to `path` durably (DurableFile). Unavailable naming the
// path on failure.
absl::Status WriteAdmissionFile(const std::string& path, int table_id,
                                absl::Span<const uint16_t> counters);

// The counters in `path`. NotFound when there is no such file; DataLoss
// naming the path when it is truncated, corrupted or of another table.
absl::StatusOr<std::vector<uint16_t>> ReadAdmissionFile(const std::string& path,
                                                        int table_id);

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_ADMISSION_FILE_H_

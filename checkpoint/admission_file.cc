#include "checkpoint/admission_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

#include "base/checksum.h"
#include "base/little_endian.h"
#include "base/status_macros.h"
#include "checkpoint/durable_file.h"

namespace petrel {
namespace {

constexpr char kMagic[] = "PTRLADM1";
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 24;  // magic, version, table id, count

void Put(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> 8 * i));
}

}  // namespace

std::string AdmissionFileName(int table_id, int server_rank) {
  return absl::StrCat("admission-", table_id, "-server-", server_rank, ".bin");
}

absl::Status WriteAdmissionFile(const std::string& path, int table_id,
                                absl::Span<const uint16_t> counters) {
  std::string bytes(kMagic, 8);
  Put(&bytes, kVersion, 4);
  Put(&bytes, static_cast<uint32_t>(table_id), 4);
  Put(&bytes, counters.size(), 8);
  bytes.reserve(bytes.size() + 2 * counters.size() + 8);
  for (uint16_t c : counters) Put(&bytes, c, 2);
  Put(&bytes, Checksum64(bytes), 8);
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<DurableFile> file,
                          DurableFile::Create(path));
  PETREL_RETURN_IF_ERROR(file->Write(bytes.data(), bytes.size()));
  return file->Commit();
}

absl::StatusOr<std::vector<uint16_t>> ReadAdmissionFile(const std::string& path,
                                                        int table_id) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no admission file ", path));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  auto bad = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(path, ": ", why));
  };
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kHeaderBytes + 8 || bytes.compare(0, 8, kMagic) != 0) {
    return bad("not an admission file (short, or no PTRLADM1 magic)");
  }
  if (LoadLittleEndian32(p + 8) != kVersion) {
    return bad(absl::StrCat("format version ", LoadLittleEndian32(p + 8),
                            " is not ", kVersion));
  }
  const uint64_t count = LoadLittleEndian64(p + 16);
  if (count > (bytes.size() - kHeaderBytes - 8) / 2 ||
      bytes.size() != kHeaderBytes + 2 * count + 8) {
    return bad(absl::StrCat("size ", bytes.size(), " does not hold ", count,
                            " counters (truncated?)"));
  }
  const size_t body = bytes.size() - 8;
  if (Checksum64(p, body) != LoadLittleEndian64(p + body)) {
    return bad("checksum mismatch (corrupted)");
  }
  if (LoadLittleEndian32(p + 12) != static_cast<uint32_t>(table_id)) {
    return bad(absl::StrCat("holds table ", LoadLittleEndian32(p + 12),
                            ", not ", table_id));
  }
  std::vector<uint16_t> counters(count);
  for (uint64_t i = 0; i < count; ++i) {
    counters[i] = static_cast<uint16_t>(p[kHeaderBytes + 2 * i] |
                                        p[kHeaderBytes + 2 * i + 1] << 8);
  }
  return counters;
}

}  // namespace petrel

#include "checkpoint/checkpoint_dir.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <utility>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "base/status_macros.h"
#include "checkpoint/durable_file.h"

namespace petrel {
namespace {

constexpr char kCheckpointPrefix[] = "ckpt-";
// A manifest holds the job config and the key-range map (at most 2^20
// ranges, ~13 MB); anything much larger is not one.
constexpr int64_t kMaxManifestBytes = int64_t{256} << 20;

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p.
absl::Status MakeDirs(const std::string& path) {
  if (path.empty() || IsDir(path)) return absl::OkStatus();
  const std::string parent = DirName(path);
  if (parent != path) PETREL_RETURN_IF_ERROR(MakeDirs(parent));
  if (::mkdir(path.c_str(), 0755) != 0 && !(errno == EEXIST && IsDir(path))) {
    return ErrnoStatus(absl::StatusCode::kFailedPrecondition, "mkdir", path,
                       errno == EEXIST ? ENOTDIR : errno);
  }
  return absl::OkStatus();
}

// The id of checkpoint directory `name` ("ckpt-00000012"), or false.
bool ParseCheckpointName(const std::string& name, uint64_t* id) {
  const size_t prefix = sizeof(kCheckpointPrefix) - 1;
  if (name.size() <= prefix || name.compare(0, prefix, kCheckpointPrefix) != 0)
    return false;
  const std::string digits = name.substr(prefix);
  if (!std::all_of(digits.begin(), digits.end(),
                   [](char c) { return absl::ascii_isdigit(c); })) {
    return false;
  }
  // Only the canonical spelling, so that no two names mean the same id.
  return absl::SimpleAtoi(digits, id) &&
         BaseName(CheckpointPath("", *id)) == name;
}

// Ids of every checkpoint directory under `root`, complete or not,
// ascending. An empty list when `root` does not exist.
absl::StatusOr<std::vector<uint64_t>> ListCheckpointDirs(
    const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return std::vector<uint64_t>();
    return ErrnoStatus(absl::StatusCode::kFailedPrecondition, "open", root,
                       errno);
  }
  std::vector<uint64_t> ids;
  while (const dirent* entry = ::readdir(dir)) {
    uint64_t id;
    if (ParseCheckpointName(entry->d_name, &id) &&
        IsDir(CheckpointPath(root, id))) {
      ids.push_back(id);
    }
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Removes checkpoint directory `path`: its MANIFEST first, so that a
// removal cut short leaves an incomplete checkpoint, never a damaged one
// that looks complete.
absl::Status RemoveCheckpointDir(const std::string& path) {
  const std::string manifest = absl::StrCat(path, "/", kManifestName);
  if (::unlink(manifest.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "remove", manifest,
                       errno);
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("remove ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return ErrnoStatus(err == ENOENT ? absl::StatusCode::kNotFound
                                     : absl::StatusCode::kUnavailable,
                       "open", path, err);
  }
  std::string bytes;
  char buffer[1 << 16];
  absl::Status status;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoStatus(absl::StatusCode::kUnavailable, "read", path, errno);
      break;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(bytes.size()) > kMaxManifestBytes) {
      status = absl::DataLossError(
          absl::StrCat(path, ": larger than ", kMaxManifestBytes, " bytes"));
      break;
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return bytes;
}

// The manifest's own consistency, and its files on disk.
absl::Status CheckManifest(const std::string& dir,
                           const pb::CheckpointManifest& manifest) {
  const std::string path = absl::StrCat(dir, "/", kManifestName);
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what));
  };
  if (manifest.format_version() != kCheckpointFormatVersion) {
    return bad(absl::StrCat("format version ", manifest.format_version(),
                            ", this build reads ", kCheckpointFormatVersion));
  }
  std::set<int> table_ids;
  for (const pb::CheckpointTable& t : manifest.tables()) {
    if (t.dim() < 1 || t.stride() < t.dim()) {
      return bad(absl::StrCat("table ", t.id(), " has dim ", t.dim(),
                              " and stride ", t.stride()));
    }
    if (!table_ids.insert(t.id()).second) {
      return bad(absl::StrCat("table ", t.id(), " listed twice"));
    }
  }
  // One file per table per server that led a key range: a table's rows
  // are all there. With replicated servers, a server that died before the
  // checkpoint leads no range in its map (its successor saved them) and
  // wrote nothing.
  std::set<std::pair<int, int>> shares;
  for (const pb::CheckpointFile& f : manifest.files()) {
    if (f.server_rank() < 0 || f.server_rank() >= manifest.num_servers()) {
      return bad(absl::StrCat(f.name(), " is from server ", f.server_rank(),
                              " of ", manifest.num_servers()));
    }
    if (!shares.insert({f.table_id(), f.server_rank()}).second) {
      return bad(absl::StrCat("two files of table ", f.table_id(),
                              " from server ", f.server_rank()));
    }
  }
  std::set<int> writers;
  if (manifest.range_owners_size() > 0 &&
      manifest.range_owners_size() == manifest.range_begins_size()) {
    for (int32_t owner : manifest.range_owners()) writers.insert(owner);
  } else {
    for (int rank = 0; rank < manifest.num_servers(); ++rank) {
      writers.insert(rank);
    }
  }
  for (int table : table_ids) {
    for (int rank : writers) {
      if (shares.count({table, rank}) == 0) {
        return bad(absl::StrCat("no file of table ", table, " from server ",
                                rank, ", which leads key ranges (",
                                shares.size(), " table files for ",
                                table_ids.size(), " table(s) and ",
                                manifest.num_servers(), " servers)"));
      }
    }
  }
  for (const pb::CheckpointFile& f : manifest.files()) {
    if (f.name().empty() || f.name().find('/') != std::string::npos ||
        f.name() == "." || f.name() == "..") {
      return bad(
          absl::StrCat("bad file name \"", absl::CEscape(f.name()), "\""));
    }
    if (table_ids.count(f.table_id()) == 0) {
      return bad(absl::StrCat(f.name(), " holds table ", f.table_id(),
                              ", which the manifest does not list"));
    }
    const std::string file = absl::StrCat(dir, "/", f.name());
    struct stat st;
    if (::stat(file.c_str(), &st) != 0) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", dir, ": ", file, ": ", ErrnoText(errno)));
    }
    if (static_cast<uint64_t>(st.st_size) != f.bytes()) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", dir, ": ", file, " has ", st.st_size,
                       " bytes, the manifest says ", f.bytes()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointPath(const std::string& root, uint64_t id) {
  return absl::StrFormat("%s/%s%08d", root, kCheckpointPrefix, id);
}

std::string TableFileName(int table_id, int server_rank) {
  return absl::StrCat("table-", table_id, "-server-", server_rank, ".bin");
}

absl::Status CheckWritableDir(const std::string& root) {
  if (root.empty()) {
    return absl::InvalidArgumentError("an empty directory path");
  }
  absl::Status made = MakeDirs(root);
  if (!made.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "directory ", root, " cannot be created: ", made.message()));
  }
  static std::atomic<uint64_t> counter{0};
  const std::string probe =
      absl::StrCat(root, "/.petrel-write-check-", ::getpid(), "-", counter++);
  const int fd =
      ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("directory ", root, " is not writable: create ", probe,
                     ": ", ErrnoText(errno)));
  }
  const char byte = 0;
  int err = 0;
  const char* op = "";
  if (::write(fd, &byte, 1) != 1) {
    err = errno;
    op = "write";
  } else if (::fsync(fd) != 0) {
    err = errno;
    op = "fsync";
  }
  ::close(fd);
  ::unlink(probe.c_str());
  if (err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("directory ", root, " is not writable: ", op, " ", probe,
                     ": ", ErrnoText(err)));
  }
  return absl::OkStatus();
}

absl::Status CheckWritableFile(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("an empty file path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("file ", path, " is not writable: it is a directory"));
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("file ", path, " is not writable: ", ErrnoText(errno)));
    }
    ::close(fd);
  }
  return CheckWritableDir(DirName(path));
}

absl::StatusOr<std::string> CreateCheckpointDir(const std::string& root,
                                                uint64_t id) {
  PETREL_RETURN_IF_ERROR(MakeDirs(root));
  const std::string path = CheckpointPath(root, id);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (ReadManifest(path).ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("checkpoint ", path, " already exists and is complete"));
    }
    PETREL_RETURN_IF_ERROR(RemoveCheckpointDir(path));
  }
  if (::mkdir(path.c_str(), 0755) != 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "mkdir", path, errno);
  }
  PETREL_RETURN_IF_ERROR(SyncDir(root));
  return path;
}

absl::Status WriteManifest(const std::string& dir,
                           const pb::CheckpointManifest& manifest) {
  const std::string path = absl::StrCat(dir, "/", kManifestName);
  std::string bytes;
  if (!manifest.SerializeToString(&bytes)) {
    return absl::InternalError(
        absl::StrCat("cannot serialize the manifest for ", path));
  }
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<DurableFile> file,
                          DurableFile::Create(path));
  PETREL_RETURN_IF_ERROR(file->Write(bytes.data(), bytes.size()));
  return file->Commit();
}

absl::StatusOr<pb::CheckpointManifest> ReadManifest(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kManifestName);
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      return absl::NotFoundError(
          absl::StrCat("checkpoint ", dir, " has no ", kManifestName,
                       " (it is not a checkpoint, or an incomplete one)"));
    }
    return bytes.status();
  }
  pb::CheckpointManifest manifest;
  if (!manifest.ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a valid checkpoint manifest"));
  }
  PETREL_RETURN_IF_ERROR(CheckManifest(dir, manifest));
  return manifest;
}

absl::StatusOr<std::vector<uint64_t>> ListCheckpoints(const std::string& root) {
  PETREL_ASSIGN_OR_RETURN(std::vector<uint64_t> all, ListCheckpointDirs(root));
  std::vector<uint64_t> complete;
  for (uint64_t id : all) {
    if (ReadManifest(CheckpointPath(root, id)).ok()) complete.push_back(id);
  }
  return complete;
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& spec,
                                              const std::string& root) {
  if (spec != "latest") {
    PETREL_RETURN_IF_ERROR(ReadManifest(spec).status());
    return spec;
  }
  if (root.empty()) {
    return absl::InvalidArgumentError(
        "\"latest\" needs a checkpoint directory (checkpoint.dir or "
        "--checkpoint_dir)");
  }
  PETREL_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, ListCheckpoints(root));
  if (ids.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no complete checkpoint under ", root));
  }
  return CheckpointPath(root, ids.back());
}

absl::Status RetainCheckpoints(const std::string& root, int keep) {
  if (keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoints to keep: ", keep, ", must be >= 1"));
  }
  PETREL_ASSIGN_OR_RETURN(std::vector<uint64_t> all, ListCheckpointDirs(root));
  std::vector<uint64_t> complete;
  std::vector<uint64_t> incomplete;
  uint64_t best = 0;  // the newest "best" one; 0: none
  for (uint64_t id : all) {
    absl::StatusOr<pb::CheckpointManifest> m =
        ReadManifest(CheckpointPath(root, id));
    (m.ok() ? complete : incomplete).push_back(id);
    if (m.ok() && m->reason() == kBestCheckpointReason) best = id;
  }
  if (complete.empty()) return absl::OkStatus();
  std::vector<uint64_t> remove;
  // Incomplete ones newer than the newest complete one may be in progress.
  for (uint64_t id : incomplete) {
    if (id < complete.back()) remove.push_back(id);
  }
  if (complete.size() > static_cast<size_t>(keep)) {
    for (auto it = complete.begin(); it != complete.end() - keep; ++it) {
      if (*it != best) remove.push_back(*it);
    }
  }
  absl::Status status;
  for (uint64_t id : remove) {
    status.Update(RemoveCheckpointDir(CheckpointPath(root, id)));
  }
  return status;
}

absl::Status CheckCompatible(const pb::CheckpointManifest& manifest,
                             absl::Span<const pb::CheckpointTable> tables,
                             bool with_state) {
  auto mismatch = [](int id, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("table ", id, ": ", what));
  };
  if (manifest.format_version() != kCheckpointFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint format version ", manifest.format_version(),
                     ", this build reads ", kCheckpointFormatVersion));
  }
  for (const pb::CheckpointTable& job : tables) {
    const auto it = std::find_if(
        manifest.tables().begin(), manifest.tables().end(),
        [&](const pb::CheckpointTable& t) { return t.id() == job.id(); });
    if (it == manifest.tables().end()) {
      return mismatch(job.id(), "in the job, not in the checkpoint");
    }
    const pb::CheckpointTable& ckpt = *it;
    if (ckpt.dim() != job.dim()) {
      return mismatch(job.id(), absl::StrCat("checkpoint dim ", ckpt.dim(),
                                             ", job dim ", job.dim()));
    }
    if (ckpt.dense() != job.dense()) {
      return mismatch(job.id(), absl::StrCat("checkpoint table is ",
                                             ckpt.dense() ? "dense" : "sparse",
                                             ", job table is ",
                                             job.dense() ? "dense" : "sparse"));
    }
    if (job.dense() && ckpt.num_keys() != job.num_keys()) {
      return mismatch(job.id(),
                      absl::StrCat("checkpoint has ", ckpt.num_keys(),
                                   " dense keys, job ", job.num_keys()));
    }
    if (!with_state) continue;
    if (ckpt.optimizer() != job.optimizer()) {
      return mismatch(
          job.id(),
          absl::StrCat("checkpoint optimizer ",
                       pb::OptimizerProto::Kind_Name(ckpt.optimizer()),
                       ", job optimizer ",
                       pb::OptimizerProto::Kind_Name(job.optimizer()),
                       " (a warm start with a fresh optimizer state can "
                       "change optimizers)"));
    }
    if (ckpt.stride() != job.stride()) {
      return mismatch(job.id(),
                      absl::StrCat("checkpoint stride ", ckpt.stride(),
                                   ", job stride ", job.stride()));
    }
  }
  for (const pb::CheckpointTable& ckpt : manifest.tables()) {
    const bool in_job = std::any_of(
        tables.begin(), tables.end(),
        [&](const pb::CheckpointTable& t) { return t.id() == ckpt.id(); });
    if (!in_job)
      return mismatch(ckpt.id(), "in the checkpoint, not in the job");
  }
  return absl::OkStatus();
}

}  // namespace petrel

#include "worker/data/cache_key.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "base/checksum.h"
#include "worker/data/cache_file.h"

namespace petrel {
namespace {

constexpr size_t kSampleBytes = 4096;

absl::Status FileError(absl::string_view what, const std::string& path) {
  const int error = errno;
  std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  return absl::DataLossError(message);
}

// Checksum of the first and last kSampleBytes of the open file `fd`.
absl::StatusOr<uint64_t> SampleChecksum(int fd, uint64_t size,
                                        const std::string& path) {
  std::string sample(kSampleBytes, '\0');
  uint64_t sum = size;
  const uint64_t offsets[2] = {0,
                               size > kSampleBytes ? size - kSampleBytes : 0};
  for (uint64_t offset : offsets) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(kSampleBytes, size - offset));
    ssize_t got;
    do {
      got = pread(fd, sample.data(), want, static_cast<off_t>(offset));
    } while (got < 0 && errno == EINTR);
    if (got < 0) return FileError("cannot read", path);
    sum = Checksum64(sample.data(), static_cast<size_t>(got), sum);
  }
  return sum;
}

// "file=PATH size=... mtime_ns=... inode=... sample=...\n" for one input.
absl::StatusOr<std::string> Fingerprint(const std::string& absolute) {
  const int fd = open(absolute.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError("cannot open", absolute);
  struct stat st;
  absl::StatusOr<uint64_t> sample = absl::UnknownError("");
  if (fstat(fd, &st) != 0) {
    sample = FileError("cannot stat", absolute);
  } else {
    sample = SampleChecksum(fd, static_cast<uint64_t>(st.st_size), absolute);
  }
  close(fd);
  if (!sample.ok()) return sample.status();
  const int64_t mtime_ns =
      int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return absl::StrFormat("size=%d mtime_ns=%d inode=%d:%d sample=%016x\n",
                         st.st_size, mtime_ns, st.st_dev, st.st_ino, *sample);
}

}  // namespace

absl::StatusOr<CacheKey> MakeCacheKey(const ReaderOptions& options) {
  if (options.files.empty()) {
    return absl::InvalidArgumentError("no input files");
  }
  std::string identity = absl::StrCat(
      "petrel parsed-example cache v", kCacheFormatVersion,
      "\nformat=", options.format == DataFormat::kCriteo ? "criteo" : "libsvm",
      "\nwith_fields=", options.with_fields,
      "\nwith_numeric=", options.with_numeric,
      "\nskip_malformed=", options.skip_malformed,
      "\nmax_abs_value=", options.max_abs_value,
      "\nclip_out_of_range=", options.clip_out_of_range,
      "\nshare=", options.worker_rank, "/", options.num_workers, "\n");
  // A split reads other examples (kAll keeps the keys of older caches).
  if (options.holdout.part != HoldoutPart::kAll) {
    absl::StrAppend(
        &identity, "holdout=",
        options.holdout.part == HoldoutPart::kTrain ? "train" : "held_out", "/",
        options.holdout.fraction, "/", options.holdout.seed, "\n");
  }
  std::string stats;
  std::string first_absolute;
  for (const std::string& file : options.files) {
    char resolved[PATH_MAX];
    if (realpath(file.c_str(), resolved) == nullptr) {
      return FileError("cannot resolve", file);
    }
    const std::string absolute = resolved;
    if (first_absolute.empty()) first_absolute = absolute;
    absl::StrAppend(&identity, "file=", absolute, "\n");
    absl::StatusOr<std::string> fingerprint = Fingerprint(absolute);
    if (!fingerprint.ok()) return fingerprint.status();
    absl::StrAppend(&stats, "file=", absolute, " ", *fingerprint);
  }
  const size_t slash = first_absolute.rfind('/');
  std::string dir = options.cache.dir;
  if (dir.empty()) dir = first_absolute.substr(0, slash);
  if (dir.empty()) dir = "/";
  CacheKey key;
  key.path = absl::StrFormat(
      "%s/%s.%016x.w%dof%d.pcache", dir, first_absolute.substr(slash + 1),
      Checksum64(identity), options.worker_rank, options.num_workers);
  key.key = identity + stats;
  return key;
}

}  // namespace petrel

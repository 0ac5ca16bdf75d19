// The key and file name of a share's parsed-example cache.
//
// The key is text: the cache format version, the data format, the reader
// settings that change the parsed examples (with_fields, with_numeric,
// skip_malformed), the share (worker rank of workers), and for every input
// file its absolute path, size, modification time (ns), inode and a
// checksum of its first and last 4 KiB. A cache file is used only when its
// stored key equals the current one, so changing the input or the settings
// rebuilds it. An edit that keeps a file's size, inode, mtime and both ends
// (only possible by resetting the mtime by hand) goes unnoticed; delete the
// cache file after such an edit.
//
// The file name is `<first input's name>.<16 hex digits>.w<rank>of<n>.pcache`
// in CacheOptions::dir (default: the first input's directory); the digits
// hash everything in the key but the file stats, so each setting and input
// list has its own file, and a changed input overwrites its old one.
//
// Thread-safe (pure functions of the file system).
#ifndef PETREL_WORKER_DATA_CACHE_KEY_H_
#define PETREL_WORKER_DATA_CACHE_KEY_H_

#include <string>

#include "absl/status/statusor.h"

#include "worker/data/reader.h"

namespace petrel {

struct CacheKey {
  std::string key;   // stored in and compared with the cache file's header
  std::string path;  // the cache file
};

// The key and path for `options`' share. NotFound or DataLoss when an input
// file cannot be inspected.
absl::StatusOr<CacheKey> MakeCacheKey(const ReaderOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CACHE_KEY_H_

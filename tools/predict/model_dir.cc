#include "tools/predict/model_dir.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"

namespace petrel {
namespace {

namespace fs = std::filesystem;

bool IsDirectory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool Exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// The checkpoint directory `spec` names (see OpenModelDir).
absl::StatusOr<std::string> ResolveDir(const std::string& spec) {
  fs::path path(spec);
  if (path.filename().empty()) path = path.parent_path();  // "DIR/"
  if (path.filename() == "latest" && !Exists(path)) {
    return ResolveCheckpoint("latest", path.parent_path().string());
  }
  if (!IsDirectory(path)) {
    return absl::NotFoundError(
        absl::StrCat("model ", spec, ": no such directory"));
  }
  if (Exists(path / kManifestName)) return path.string();
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(path.string());
  if (ids.ok() && !ids->empty()) {
    return ResolveCheckpoint("latest", path.string());
  }
  return absl::NotFoundError(absl::StrCat(
      "model ", spec, ": not a complete checkpoint (no ", kManifestName,
      ": the checkpoint was not finished) nor a checkpoint root holding one"));
}

}  // namespace

absl::StatusOr<ModelDir> OpenModelDir(const std::string& spec) {
  if (spec.empty()) return absl::InvalidArgumentError("--model is required");
  ModelDir model;
  PETREL_ASSIGN_OR_RETURN(model.dir, ResolveDir(spec));
  PETREL_ASSIGN_OR_RETURN(model.manifest, ReadManifest(model.dir));
  return model;
}

}  // namespace petrel

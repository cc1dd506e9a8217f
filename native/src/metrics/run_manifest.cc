#include "metrics/run_manifest.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "runtime/files.h"
#include "runtime/peer_watch.h"

namespace fsdp {

/** The most a run.json may hold (MANIFEST_MAX_BYTES in core/protocol/regular-file.ts). */
constexpr std::uint64_t kMaxManifestBytes = 32ull * 1024 * 1024;

RunManifest::RunManifest(const std::string& run_dir, const nlohmann::json& config, int world_size)
    : path_((std::filesystem::path(run_dir) / "run.json").string()) {
  // Read as every reader of a run folder reads (core/protocol/regular-file.ts): a regular file only,
  // opened without blocking, within the size a manifest may have. Anything else (a FIFO named
  // run.json, a link to /dev/zero) is not read, and the manifest made below replaces it.
  if (std::filesystem::exists(path_)) {
    try {
      ReadOnlyFile in(path_);
      if (in.size() <= kMaxManifestBytes) {
        std::string text(in.size(), '\0');
        in.read_at(0, text.data(), text.size());
        doc_ = nlohmann::json::parse(text, nullptr, false);
      } else {
        std::fprintf(stderr, "fsdp-train-native: %s is %llu bytes, more than a run manifest may be: replaced\n",
                     path_.c_str(), static_cast<unsigned long long>(in.size()));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fsdp-train-native: %s: not read (%s): replaced\n", path_.c_str(), e.what());
    }
  }
  if (!doc_.is_object()) {
    const std::string id = std::filesystem::path(run_dir).filename().string();
    doc_ = {{"v", 1},
            {"run_id", id.empty() ? "run" : id},
            {"name", config.value("name", "run")},
            {"created", unix_time()},
            {"status", "starting"},
            {"config", config},
            {"world", {{"size", world_size}}},
            {"host", host_name()},
            {"target", "local"},
            {"pids", {::getpid()}}};
  }
  run_id_ = doc_.value("run_id", "run");
  // pids: the launcher first (fsdp-train, when it started this process, directly or through
  // mpirun), then the runtime.
  nlohmann::json pids = nlohmann::json::array();
  const nlohmann::json& old = doc_["pids"];
  if (old.is_array() && !old.empty() && old[0].is_number_integer() && is_ancestor(old[0].get<int>()))
    pids.push_back(old[0]);
  pids.push_back(::getpid());
  doc_["pids"] = pids;
}

void RunManifest::add_pids(const std::vector<int>& pids) {
  for (int pid : pids)
    if (std::find(doc_["pids"].begin(), doc_["pids"].end(), nlohmann::json(pid)) == doc_["pids"].end())
      doc_["pids"].push_back(pid);
}

void RunManifest::update(const nlohmann::json& fields) {
  for (auto& [k, v] : fields.items()) doc_[k] = v;
  doc_["updated"] = unix_time();
  const std::string text = doc_.dump(2) + "\n";
  try {
    write_file_atomically(path_, text);
  } catch (const FileError& e) {
    if (e.err() != ENOSPC && e.err() != EDQUOT) throw;
    // A full disk has no room for the temporary copy; the blocks run.json frees when truncated
    // hold its new text (about as long), so that the run's status is still written.
    write_file_in_place(path_, text);
  }
}

}  // namespace fsdp

#include "checkpoint/manifest.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "checkpoint/state_file.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kVersion = 1;
constexpr long long kMaxWorldSize = 1 << 20;       // more ranks than any job has
constexpr long long kMaxStep = 1'000'000'000'000;  // 10^12 steps: beyond any run
constexpr std::uint64_t kMaxManifestBytes = 64 << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

/** j[key] as a whole number in [lo, hi]; throws naming the file and the field otherwise. */
long long integer(const nlohmann::json& j, const char* key, long long lo, long long hi, const std::string& path,
                  const std::string& where = "") {
  if (!j.contains(key)) fail(path, where + key + " is missing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer()) fail(path, where + key + " is " + v.dump() + ", not a whole number");
  const bool in_range = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi) &&
                                                     static_cast<long long>(v.get<std::uint64_t>()) >= lo
                                               : v.get<long long>() >= lo && v.get<long long>() <= hi;
  if (!in_range)
    fail(path, where + key + " is " + v.dump() + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v.get<long long>();
}

}  // namespace

std::string checkpoint_folder_name(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08ld", step);
  return buf;
}

std::string state_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.bin", rank);
  return buf;
}

std::string manifest_text(long step, int world_size, const std::vector<ListedFile>& files) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : files)
    list.push_back({{"name", f.name}, {"rank", f.rank}, {"bytes", f.bytes}, {"crc32", f.crc32}});
  const nlohmann::json manifest = {{"format", "fsdp-studio-checkpoint"}, {"version", kVersion}, {"step", step},
                                   {"world_size", world_size},           {"complete", true},    {"files", list}};
  return manifest.dump(2) + "\n";
}

CheckpointManifest read_manifest(const std::string& dir) {
  CheckpointManifest m;
  m.path = (fs::path(dir) / "manifest.json").string();
  const std::string& path = m.path;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) fail(path, "missing (the checkpoint was not completed)");
  const ReadOnlyFile file(path, false);
  if (file.size() > kMaxManifestBytes) fail(path, std::to_string(file.size()) + " bytes: larger than any manifest");
  std::string text(file.size(), '\0');
  file.read_at(0, text.data(), text.size());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "fsdp-studio-checkpoint")
    fail(path, "not a checkpoint manifest");
  if (!j.contains("complete") || j["complete"] != true) fail(path, "the checkpoint is not marked complete");
  if (!j.contains("version") || j["version"] != kVersion)
    fail(path, "unsupported version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")));
  m.step = static_cast<long>(integer(j, "step", 0, kMaxStep, path));
  m.world_size = static_cast<int>(integer(j, "world_size", 1, kMaxWorldSize, path));
  // A folder named step-N (every folder the writer makes) holds the checkpoint of step N.
  const std::string folder = fs::path(dir).lexically_normal().filename().string();
  long named = -1;
  if (std::sscanf(folder.c_str(), "step-%ld", &named) == 1 && folder == checkpoint_folder_name(named) &&
      named != m.step) {
    fail(path, "step is " + std::to_string(m.step) + " but the folder is " + folder);
  }
  if (!j.contains("files") || !j["files"].is_array() || j["files"].empty()) fail(path, "lists no files");
  if (j["files"].size() > static_cast<std::size_t>(m.world_size)) {
    fail(path, "lists " + std::to_string(j["files"].size()) + " files for a world of " + std::to_string(m.world_size) +
                   " ranks");
  }
  std::set<int> ranks;
  for (const auto& f : j["files"]) {
    if (!f.is_object()) fail(path, "a files entry is not an object");
    ListedFile listed;
    if (!f.contains("name") || !f["name"].is_string()) fail(path, "files[].name is missing or not a string");
    listed.name = f["name"].get<std::string>();
    if (f.contains("rank")) {
      listed.rank = static_cast<int>(integer(f, "rank", 0, m.world_size - 1, path, "files[]."));
    } else {  // manifests written before several ranks could train name the rank only in the file name
      int r = -1;
      if (std::sscanf(listed.name.c_str(), "rank-%d.bin", &r) != 1 || r < 0 || r >= m.world_size)
        fail(path, "files[].name " + f["name"].dump() + " is not the state file of a rank");
      listed.rank = r;
    }
    const std::string where = "files[rank " + std::to_string(listed.rank) + "].";
    if (!ranks.insert(listed.rank).second) fail(path, "lists rank " + std::to_string(listed.rank) + " twice");
    // Only the name the writer gives: no folders, no "..", no absolute paths, nothing else to open.
    if (listed.name != state_file_name(listed.rank)) {
      fail(path, where + "name " + f["name"].dump() + " is not " + state_file_name(listed.rank) +
                     " (files named in a checkpoint must be its own)");
    }
    listed.bytes =
        static_cast<std::uint64_t>(integer(f, "bytes", kStateHeaderBytes, kMaxStep * 1'000'000, path, where));
    listed.crc32 = static_cast<std::uint32_t>(integer(f, "crc32", 0, 0xffffffffLL, path, where));
    m.files.push_back(listed);
  }
  if (!ranks.count(0)) fail(path, "lists no file of rank 0 (which holds the trainer's state)");
  std::sort(m.files.begin(), m.files.end(), [](const ListedFile& a, const ListedFile& b) { return a.rank < b.rank; });
  return m;
}

void check_listed_file(const std::string& dir, const ListedFile& f) {
  const std::string path = (fs::path(dir) / f.name).string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) fail(path, "missing");
  {
    const ReadOnlyFile file(path, false);
    if (file.size() != f.bytes)
      fail(path, std::to_string(file.size()) + " bytes, the manifest says " + std::to_string(f.bytes) + " (truncated)");
    if (file_crc32(file) != f.crc32) fail(path, "checksum mismatch (corrupted)");
  }
  check_state_file(path);
}

}  // namespace fsdp

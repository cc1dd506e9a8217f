#include "checkpoint/checkpoint.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 32;  // magic, version u32, reserved u32, payload bytes u64, payload CRC-32 u32, reserved u32

std::string step_name(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08ld", step);
  return buf;
}

std::string rank_file(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.bin", rank);
  return buf;
}

std::uint32_t crc_of(const char* data, std::size_t n, std::uint32_t crc = 0) {
  uLong c = crc;
  while (n > 0) {
    const uInt piece = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data), piece);
    data += piece, n -= piece;
  }
  return static_cast<std::uint32_t>(c);
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/** CRC-32 of a file's bytes from `offset`, read in pieces (checkpoints can be gigabytes). */
std::uint32_t file_crc(const std::string& path, std::uint64_t offset = 0) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> buf(1 << 20);
  std::uint32_t crc = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    crc = crc_of(buf.data(), static_cast<std::size_t>(in.gcount()), crc);
  }
  return crc;
}

/** Checks a state file's header, size and payload checksum; throws naming the path. */
void check_state_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[kHeaderBytes] = {};
  in.read(header, kHeaderBytes);
  if (!in || std::memcmp(header, kMagic, 8) != 0) throw std::runtime_error(path + ": not a checkpoint state file (bad magic)");
  std::uint32_t version, crc;
  std::uint64_t payload;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&payload, header + 16, 8);
  std::memcpy(&crc, header + 24, 4);
  if (version != kVersion) throw std::runtime_error(path + ": unsupported checkpoint version " + std::to_string(version));
  const std::uint64_t size = fs::file_size(path);
  if (size != kHeaderBytes + payload) {
    throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, expected " + std::to_string(kHeaderBytes + payload) + " (truncated)");
  }
  if (file_crc(path, kHeaderBytes) != crc) throw std::runtime_error(path + ": checksum mismatch (corrupted)");
}

/** Writes a state file section by section, keeping the payload's CRC; the header goes in last. */
class StateFileWriter {
 public:
  explicit StateFileWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw std::runtime_error(path + ": cannot create");
    out_.write(std::string(kHeaderBytes, '\0').data(), kHeaderBytes);
  }
  /** A named section: u16 name length, name, u64 byte count, bytes. */
  void section(const std::string& name, const void* data, std::size_t n) {
    const auto len = static_cast<std::uint16_t>(name.size());
    const std::uint64_t count = n;
    raw(&len, 2);
    raw(name.data(), name.size());
    raw(&count, 8);
    raw(data, n);
  }
  /** Writes the header and flushes to disk; returns the file's size and the CRC of the whole file. */
  std::pair<std::uint64_t, std::uint32_t> finish() {
    char header[kHeaderBytes] = {};
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, &kVersion, 4);
    std::memcpy(header + 16, &bytes_, 8);
    std::memcpy(header + 24, &crc_, 4);
    out_.seekp(0);
    out_.write(header, kHeaderBytes);
    out_.close();
    if (!out_) throw std::runtime_error(path_ + ": write failed");
    sync_path(path_);
    return {kHeaderBytes + bytes_, file_crc(path_)};
  }

 private:
  void raw(const void* data, std::size_t n) {
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    crc_ = crc_of(static_cast<const char*>(data), n, crc_);
    bytes_ += n;
  }
  std::string path_;
  std::ofstream out_;
  std::uint32_t crc_ = 0;
  std::uint64_t bytes_ = 0;
};

/** Reads a state file's sections in order. */
class StateFileReader {
 public:
  explicit StateFileReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw std::runtime_error(path + ": cannot open");
    in_.seekg(kHeaderBytes);
  }
  void section(const std::string& name, void* dst, std::size_t bytes) {
    if (expect(name) != bytes) throw std::runtime_error(path_ + ": section " + name + " has the wrong size");
    read(dst, bytes);
  }
  std::string section(const std::string& name) {
    std::string s(expect(name), '\0');
    read(s.data(), s.size());
    return s;
  }

 private:
  std::uint64_t expect(const std::string& name) {
    std::uint16_t len = 0;
    read(&len, 2);
    std::string found(len, '\0');
    read(found.data(), len);
    std::uint64_t bytes = 0;
    read(&bytes, 8);
    if (found != name) throw std::runtime_error(path_ + ": expected section " + name + ", found " + found);
    return bytes;
  }
  void read(void* dst, std::size_t n) {
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_) throw std::runtime_error(path_ + ": truncated section");
  }
  std::string path_;
  std::ifstream in_;
};

/** The state file's per-unit sections in their order: parameters, then AdamW's two moments. */
template <class F>
void for_each_unit_section(const ParamLayout& layout, ModelState& state, F&& f) {
  for (int u = 0; u < state.unit_count(); ++u) {
    const LocalShard sh = state.local(u);
    const std::size_t bytes = sizeof(float) * sh.count;
    f(layout.units[u].name + "/params", sh.params, bytes);
    f(layout.units[u].name + "/adam_m", sh.m, bytes);
    f(layout.units[u].name + "/adam_v", sh.v, bytes);
  }
}

}  // namespace

SavedCheckpoint save_checkpoint(const std::string& dir, long step, const nlohmann::json& trainer_state, const ParamLayout& layout, ModelState& state,
                                int rank, int world_size) {
  fs::create_directories(dir);
  const fs::path final_dir = fs::path(dir) / step_name(step);
  const fs::path tmp_dir = fs::path(dir) / (".tmp-" + step_name(step) + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp_dir);
  fs::create_directories(tmp_dir);

  // The trainer's state and the layout it belongs to, then every unit's local state.
  nlohmann::json meta = {{"trainer", trainer_state}, {"rank", rank}, {"world_size", world_size}, {"units", nlohmann::json::array()}};
  for (int u = 0; u < state.unit_count(); ++u) {
    const LocalShard sh = state.local(u);
    meta["units"].push_back({{"name", layout.units[u].name}, {"numel", layout.units[u].numel}, {"offset", sh.offset}, {"count", sh.count}});
  }
  const std::string name = rank_file(rank);
  StateFileWriter w((tmp_dir / name).string());
  const std::string meta_text = meta.dump();
  w.section("meta", meta_text.data(), meta_text.size());
  for_each_unit_section(layout, state, [&](const std::string& section, const float* data, std::size_t bytes) { w.section(section, data, bytes); });
  const auto [file_bytes, file_crc32] = w.finish();

  // The manifest is the completion marker: written last, after every state file is on disk.
  const nlohmann::json manifest = {{"format", "fsdp-studio-checkpoint"}, {"version", kVersion}, {"step", step}, {"world_size", world_size},
                                   {"complete", true}, {"files", {{{"name", name}, {"bytes", file_bytes}, {"crc32", file_crc32}}}}};
  const std::string manifest_text = manifest.dump(2) + "\n";
  write_file_atomically((tmp_dir / "manifest.json").string(), manifest_text);
  sync_path(tmp_dir.string());
  if (fs::exists(final_dir)) {
    // A rolled-back run saves the same step again: the new checkpoint replaces the old one.
    const fs::path old = fs::path(dir) / (".old-" + step_name(step) + "-" + std::to_string(::getpid()));
    fs::rename(final_dir, old);
    fs::rename(tmp_dir, final_dir);
    fs::remove_all(old);
  } else {
    fs::rename(tmp_dir, final_dir);
  }
  sync_path(dir);
  return {final_dir.string(), step, file_bytes + manifest_text.size()};
}

std::string verify_checkpoint(const std::string& path, int rank) {
  try {
    const fs::path manifest_path = fs::path(path) / "manifest.json";
    if (!fs::exists(manifest_path)) return manifest_path.string() + ": missing (the checkpoint was not completed)";
    const nlohmann::json manifest = nlohmann::json::parse(read_small_file(manifest_path.string()), nullptr, false);
    if (!manifest.is_object() || manifest.value("format", "") != "fsdp-studio-checkpoint") return manifest_path.string() + ": not a checkpoint manifest";
    if (!manifest.value("complete", false)) return manifest_path.string() + ": the checkpoint is not marked complete";
    if (manifest.value("version", 0u) != kVersion) return manifest_path.string() + ": unsupported version";
    if (!manifest.contains("files") || !manifest["files"].is_array()) return manifest_path.string() + ": lists no files";
    for (const auto& f : manifest["files"]) {
      const std::string file = (fs::path(path) / f.value("name", "")).string();
      if (!fs::exists(file)) return file + ": missing";
      const std::uint64_t size = fs::file_size(file), expected = f.value("bytes", std::uint64_t{0});
      if (size != expected) return file + ": " + std::to_string(size) + " bytes, the manifest says " + std::to_string(expected) + " (truncated)";
      if (file_crc(file) != f.value("crc32", 0u)) return file + ": checksum mismatch (corrupted)";
      if (f.value("name", "") == rank_file(rank)) check_state_file(file);
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

nlohmann::json load_checkpoint(const std::string& path, const ParamLayout& layout, ModelState& state, int rank) {
  const std::string problem = verify_checkpoint(path, rank);
  if (!problem.empty()) throw std::runtime_error(problem + "; not loaded");
  const std::string file = (fs::path(path) / rank_file(rank)).string();
  StateFileReader r(file);
  const nlohmann::json meta = nlohmann::json::parse(r.section("meta"));
  const auto& units = meta["units"];
  if (units.size() != static_cast<std::size_t>(state.unit_count())) {
    throw std::runtime_error(file + ": holds " + std::to_string(units.size()) + " units, the model has " + std::to_string(state.unit_count()));
  }
  for (int u = 0; u < state.unit_count(); ++u) {
    const LocalShard sh = state.local(u);
    const auto& saved = units[u];
    if (saved["name"] != layout.units[u].name || saved["numel"] != layout.units[u].numel || saved["offset"] != sh.offset || saved["count"] != sh.count) {
      throw std::runtime_error(file + ": unit " + saved.value("name", "?") + " (" + saved["numel"].dump() + " parameters) does not match the model's " +
                               layout.units[u].name + " (" + std::to_string(layout.units[u].numel) + ")");
    }
  }
  for_each_unit_section(layout, state, [&](const std::string& section, float* data, std::size_t bytes) { r.section(section, data, bytes); });
  return meta["trainer"];
}

std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<long, std::string>> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    long step = -1;
    if (e.is_directory() && std::sscanf(name.c_str(), "step-%ld", &step) == 1 && name == step_name(step)) out.emplace_back(step, e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

void prune_checkpoints(const std::string& dir, int keep_last_n) {
  const auto all = list_checkpoints(dir);
  for (std::size_t i = static_cast<std::size_t>(keep_last_n); i < all.size(); ++i) fs::remove_all(all[i].second);
  if (!fs::is_directory(dir)) return;
  // Folders of writes that never finished (a process killed while saving): one process writes
  // here at a time, and it is past its own save, so every such folder is stale.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".old-", 0) == 0) {
      std::error_code ec;
      fs::remove_all(e.path(), ec);
    }
  }
}

}  // namespace fsdp

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

#include "backend/backend.h"
#include "parallel/agreement.h"
#include "parallel/replicated_state.h"
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

/** Where each section of a state file is, so that any range of any section can be read. */
class StateFileReader {
 public:
  explicit StateFileReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw std::runtime_error(path + ": cannot open");
    in_.seekg(0, std::ios::end);
    const std::uint64_t size = static_cast<std::uint64_t>(in_.tellg());
    for (std::uint64_t at = kHeaderBytes; at < size;) {
      in_.seekg(static_cast<std::streamoff>(at));
      std::uint16_t len = 0;
      read(&len, 2);
      std::string name(len, '\0');
      read(name.data(), len);
      std::uint64_t bytes = 0;
      read(&bytes, 8);
      at += 2 + len + 8;
      if (at + bytes > size) throw std::runtime_error(path + ": section " + name + " runs past the end (truncated)");
      sections_.emplace_back(name, std::make_pair(at, bytes));
      at += bytes;
    }
  }
  std::string text(const std::string& name) {
    const auto [at, bytes] = find(name);
    std::string s(bytes, '\0');
    read_at(at, s.data(), bytes);
    return s;
  }
  /** Elements [first, first + count) of a float32 section. */
  void floats(const std::string& name, std::size_t first, std::size_t count, float* dst) {
    const auto [at, bytes] = find(name);
    if (sizeof(float) * (first + count) > bytes) throw std::runtime_error(path_ + ": section " + name + " is shorter than its unit's range");
    read_at(at + sizeof(float) * first, dst, sizeof(float) * count);
  }

 private:
  std::pair<std::uint64_t, std::uint64_t> find(const std::string& name) const {
    for (const auto& [n, where] : sections_)
      if (n == name) return where;
    throw std::runtime_error(path_ + ": no section " + name);
  }
  void read_at(std::uint64_t at, void* dst, std::size_t n) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(at));
    read(dst, n);
  }
  void read(void* dst, std::size_t n) {
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_) throw std::runtime_error(path_ + ": truncated section");
  }
  std::string path_;
  std::ifstream in_;
  std::vector<std::pair<std::string, std::pair<std::uint64_t, std::uint64_t>>> sections_;
};

/** A unit's sections in a state file, in their order: the parameters, then AdamW's two moments. */
struct UnitSection {
  const char* suffix;
  float* LocalShard::*field;
};
constexpr UnitSection kUnitSections[] = {{"/params", &LocalShard::params}, {"/adam_m", &LocalShard::m}, {"/adam_v", &LocalShard::v}};

/** n floats of a GPU's memory seen through host memory (with no GPU, the floats themselves). */
class HostCopy {
 public:
  HostCopy(Backend* device, std::size_t n) : device_(device), n_(n) {
    if (device_) host_.resize(n);
  }
  /** The floats at p, readable on the host. */
  const float* from(const float* p) {
    if (!device_) return p;
    device_->download(host_.data(), p, sizeof(float) * n_);
    return host_.data();
  }
  /** Where to write floats that upload() then moves to p. */
  float* to(float* p) { return device_ ? host_.data() : p; }
  void upload(float* p) {
    if (device_) device_->upload(p, host_.data(), sizeof(float) * n_);
  }

 private:
  Backend* device_;
  std::size_t n_;
  std::vector<float> host_;
};

/** A unit's range in one state file: elements [offset, offset + count) of the unit. */
struct StoredRange {
  std::size_t offset = 0, count = 0;
};

/** One state file of a checkpoint: its meta and, per unit in model order, the range it holds. */
struct StoredFile {
  std::string path;
  nlohmann::json meta;
  std::vector<std::string> names;
  std::vector<std::size_t> numels;
  std::vector<StoredRange> ranges;
};

nlohmann::json read_manifest(const std::string& path) {
  const fs::path manifest_path = fs::path(path) / "manifest.json";
  if (!fs::exists(manifest_path)) throw std::runtime_error(manifest_path.string() + ": missing (the checkpoint was not completed)");
  const nlohmann::json manifest = nlohmann::json::parse(read_small_file(manifest_path.string()), nullptr, false);
  if (!manifest.is_object() || manifest.value("format", "") != "fsdp-studio-checkpoint") throw std::runtime_error(manifest_path.string() + ": not a checkpoint manifest");
  if (!manifest.value("complete", false)) throw std::runtime_error(manifest_path.string() + ": the checkpoint is not marked complete");
  if (manifest.value("version", 0u) != kVersion) throw std::runtime_error(manifest_path.string() + ": unsupported version");
  if (!manifest.contains("files") || !manifest["files"].is_array() || manifest["files"].empty()) throw std::runtime_error(manifest_path.string() + ": lists no files");
  return manifest;
}

/** Checks one listed file against the manifest (size, whole-file CRC) and its own header; throws naming it. */
void check_listed_file(const std::string& dir, const nlohmann::json& f) {
  const std::string file = (fs::path(dir) / f.value("name", "")).string();
  if (!fs::exists(file)) throw std::runtime_error(file + ": missing");
  const std::uint64_t size = fs::file_size(file), expected = f.value("bytes", std::uint64_t{0});
  if (size != expected) throw std::runtime_error(file + ": " + std::to_string(size) + " bytes, the manifest says " + std::to_string(expected) + " (truncated)");
  if (file_crc(file) != f.value("crc32", 0u)) throw std::runtime_error(file + ": checksum mismatch (corrupted)");
  check_state_file(file);
}

StoredFile read_stored_file(const std::string& path) {
  StateFileReader r(path);
  StoredFile f{path, nlohmann::json::parse(r.text("meta")), {}, {}, {}};
  for (const auto& u : f.meta.at("units")) {
    f.names.push_back(u.at("name").get<std::string>());
    f.numels.push_back(u.at("numel").get<std::size_t>());
    f.ranges.push_back({u.at("offset").get<std::size_t>(), u.at("count").get<std::size_t>()});
  }
  return f;
}

/** Writes the folder's manifest last, then renames the folder into place (replacing one of the same step). */
std::uint64_t complete_folder(const fs::path& tmp_dir, const fs::path& final_dir, long step, int world_size, const nlohmann::json& files) {
  const nlohmann::json manifest = {{"format", "fsdp-studio-checkpoint"}, {"version", kVersion}, {"step", step}, {"world_size", world_size},
                                   {"complete", true}, {"files", files}};
  const std::string manifest_text = manifest.dump(2) + "\n";
  write_file_atomically((tmp_dir / "manifest.json").string(), manifest_text);
  sync_path(tmp_dir.string());
  if (fs::exists(final_dir)) {
    // A rolled-back run saves the same step again: the new checkpoint replaces the old one.
    const fs::path old = final_dir.parent_path() / (".old-" + final_dir.filename().string() + "-" + std::to_string(::getpid()));
    fs::rename(final_dir, old);
    fs::rename(tmp_dir, final_dir);
    fs::remove_all(old);
  } else {
    fs::rename(tmp_dir, final_dir);
  }
  sync_path(final_dir.parent_path().string());
  return manifest_text.size();
}

}  // namespace

SavedCheckpoint save_checkpoint(const std::string& dir, long step, const nlohmann::json& trainer_state, const ParamLayout& layout, ModelState& state) {
  Collectives& world = state.collectives();
  const int rank = world.rank(), W = world.size();
  // Rank 0 names the temporary folder, every rank writes its file into it, rank 0 completes it.
  std::uint32_t tag = rank == 0 ? static_cast<std::uint32_t>(::getpid()) : 0;
  world.broadcast(&tag, sizeof tag, 0);
  const fs::path final_dir = fs::path(dir) / step_name(step);
  const fs::path tmp_dir = fs::path(dir) / (".tmp-" + step_name(step) + "-" + std::to_string(tag));
  std::string error;
  if (rank == 0) {
    try {
      fs::create_directories(dir);
      fs::remove_all(tmp_dir);
      fs::create_directories(tmp_dir);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) throw std::runtime_error(error);

  // This rank's file: what it owns of every unit (a replica that owns nothing writes none).
  bool owns = rank == 0;
  for (int u = 0; u < state.unit_count(); ++u) owns = owns || state.owned(u).count > 0;
  double record[3] = {0, 0, 0};  // written, bytes, whole-file CRC
  if (owns) {
    try {
      nlohmann::json meta = {{"rank", rank}, {"world_size", W}, {"units", nlohmann::json::array()}};
      if (rank == 0) meta["trainer"] = trainer_state;
      for (int u = 0; u < state.unit_count(); ++u) {
        const LocalShard sh = state.owned(u);
        meta["units"].push_back({{"name", layout.units[u].name}, {"numel", layout.units[u].numel}, {"offset", sh.offset}, {"count", sh.count}});
      }
      StateFileWriter w((tmp_dir / rank_file(rank)).string());
      const std::string meta_text = meta.dump();
      w.section("meta", meta_text.data(), meta_text.size());
      for (int u = 0; u < state.unit_count(); ++u) {
        const LocalShard sh = state.owned(u);
        HostCopy host(state.device(), sh.count);
        for (const auto& section : kUnitSections) w.section(layout.units[u].name + section.suffix, host.from(sh.*section.field), sizeof(float) * sh.count);
      }
      const auto [file_bytes, file_crc32] = w.finish();
      record[0] = 1, record[1] = static_cast<double>(file_bytes), record[2] = file_crc32;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) throw std::runtime_error(error);

  // The manifest is the completion marker: rank 0 writes it once every file is on disk.
  const std::vector<double> records = gather_values(world, {record[0], record[1], record[2]});
  std::uint64_t total = 0;
  nlohmann::json files = nlohmann::json::array();
  for (int r = 0; r < W; ++r) {
    if (records[3 * r] == 0) continue;
    const auto bytes = static_cast<std::uint64_t>(records[3 * r + 1]);
    files.push_back({{"name", rank_file(r)}, {"rank", r}, {"bytes", bytes}, {"crc32", static_cast<std::uint32_t>(records[3 * r + 2])}});
    total += bytes;
  }
  if (rank == 0) {
    try {
      total += complete_folder(tmp_dir, final_dir, step, W, files);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) throw std::runtime_error(error);
  return {final_dir.string(), step, total};
}

std::string verify_checkpoint(const std::string& path) {
  try {
    const nlohmann::json manifest = read_manifest(path);
    for (const auto& f : manifest["files"]) check_listed_file(path, f);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

nlohmann::json load_checkpoint(const std::string& path, const ParamLayout& layout, ModelState& state) {
  nlohmann::json trainer;
  std::string error;
  try {
    const nlohmann::json manifest = read_manifest(path);
    std::vector<StoredFile> files;
    for (const auto& f : manifest["files"]) {
      StoredFile stored;
      try {
        stored = read_stored_file((fs::path(path) / f.value("name", "")).string());
      } catch (const std::exception&) {
        check_listed_file(path, f);  // says what is wrong with a damaged file, by its path
        throw;
      }
      if (stored.names.size() != static_cast<std::size_t>(state.unit_count())) {
        throw std::runtime_error(stored.path + ": holds " + std::to_string(stored.names.size()) + " units, the model has " + std::to_string(state.unit_count()));
      }
      for (int u = 0; u < state.unit_count(); ++u) {
        if (stored.names[u] != layout.units[u].name || stored.numels[u] != layout.units[u].numel) {
          throw std::runtime_error(stored.path + ": unit " + stored.names[u] + " (" + std::to_string(stored.numels[u]) + " parameters) does not match the model's " +
                                   layout.units[u].name + " (" + std::to_string(layout.units[u].numel) + ")");
        }
      }
      if (stored.meta.contains("trainer")) trainer = stored.meta["trainer"];
      files.push_back(std::move(stored));
    }
    if (trainer.is_null()) throw std::runtime_error(path + ": no file holds the trainer's state");

    // The files this rank reads from are checked whole before anything is copied.
    std::vector<bool> needed(files.size(), false);
    for (int u = 0; u < state.unit_count(); ++u) {
      const LocalShard want = state.local(u);
      for (std::size_t f = 0; f < files.size(); ++f) {
        const StoredRange have = files[f].ranges[u];
        needed[f] = needed[f] || (have.offset < want.offset + want.count && want.offset < have.offset + have.count);
      }
    }
    for (std::size_t f = 0; f < files.size(); ++f)
      if (needed[f]) check_listed_file(path, manifest["files"][f]);

    // Each local range is put together from the pieces of it the files hold.
    for (int u = 0; u < state.unit_count(); ++u) {
      const LocalShard want = state.local(u);
      std::size_t covered = 0;
      for (auto& file : files) {
        const StoredRange have = file.ranges[u];
        const std::size_t lo = std::max(want.offset, have.offset), hi = std::min(want.offset + want.count, have.offset + have.count);
        if (lo >= hi) continue;
        StateFileReader r(file.path);
        HostCopy host(state.device(), hi - lo);
        for (const auto& section : kUnitSections) {
          float* dst = want.*section.field + (lo - want.offset);
          r.floats(layout.units[u].name + section.suffix, lo - have.offset, hi - lo, host.to(dst));
          host.upload(dst);
        }
        covered += hi - lo;
      }
      if (covered != want.count) {
        throw std::runtime_error(path + ": holds " + std::to_string(covered) + " of the " + std::to_string(want.count) + " elements of " + layout.units[u].name +
                                 " this rank needs (files missing from the manifest?)");
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = first_failure(state.collectives(), error);
  if (!error.empty()) throw std::runtime_error(error + "; not loaded");
  state.publish_params();
  return trainer;
}

SavedCheckpoint export_checkpoint(const std::string& path, const std::string& out_dir) {
  const nlohmann::json manifest = read_manifest(path);
  // The units as the checkpoint names them: all a full copy of the state needs to know of the model.
  const StoredFile first = read_stored_file((fs::path(path) / manifest["files"][0].value("name", "")).string());
  ParamLayout layout;
  for (std::size_t u = 0; u < first.names.size(); ++u) {
    UnitLayout unit;
    unit.name = first.names[u];
    unit.numel = first.numels[u];
    layout.units.push_back(unit);
    layout.total += unit.numel;
  }
  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  const nlohmann::json trainer = load_checkpoint(path, layout, whole);
  return save_checkpoint(out_dir, manifest.at("step").get<long>(), trainer, layout, whole);
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

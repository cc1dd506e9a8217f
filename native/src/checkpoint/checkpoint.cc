#include "checkpoint/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "backend/backend.h"
#include "checkpoint/manifest.h"
#include "checkpoint/state_file.h"
#include "parallel/agreement.h"
#include "parallel/replicated_state.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

/** A unit's sections in a state file, in their order (kUnitSectionSuffixes), and where each lives in a shard. */
constexpr float* LocalShard::*kUnitFields[3] = {&LocalShard::params, &LocalShard::m, &LocalShard::v};

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

/** Writes the folder's manifest last, then renames the folder into place (replacing one of the same step). */
std::uint64_t complete_folder(const fs::path& tmp_dir, const fs::path& final_dir, long step, int world_size,
                              const std::vector<ListedFile>& files) {
  const std::string text = manifest_text(step, world_size, files);
  write_file_atomically((tmp_dir / "manifest.json").string(), text);
  sync_path(tmp_dir.string());
  if (fs::exists(final_dir)) {
    // A rolled-back run saves the same step again: the new checkpoint replaces the old one.
    const fs::path old =
        final_dir.parent_path() / (".old-" + final_dir.filename().string() + "-" + std::to_string(::getpid()));
    fs::rename(final_dir, old);
    try {
      fs::rename(tmp_dir, final_dir);
    } catch (...) {
      fs::rename(old, final_dir);  // the old checkpoint stays where it was
      throw;
    }
    fs::remove_all(old);
  } else {
    fs::rename(tmp_dir, final_dir);
  }
  sync_path(final_dir.parent_path().string());
  return text.size();
}

/** The manifest and every listed file's meta, checked against each other; throws naming the file. */
struct ReadCheckpoint {
  CheckpointManifest manifest;
  std::vector<StoredFile> files;  // in the manifest's (rank) order
  nlohmann::json trainer;
};

ReadCheckpoint read_checkpoint(const std::string& path) {
  ReadCheckpoint c;
  c.manifest = read_manifest(path);
  for (const ListedFile& f : c.manifest.files) {
    const std::string file = (fs::path(path) / f.name).string();
    try {
      c.files.push_back(read_stored_file(file, f.rank, c.manifest.world_size));
    } catch (const std::exception&) {
      check_listed_file(path, f);  // says what is wrong with a damaged file (size, checksum) first
      throw;
    }
  }
  const StoredFile& first = c.files.front();  // rank 0's: read_manifest requires it
  if (first.trainer.is_null()) throw std::runtime_error(first.path + ": holds no trainer state (rank 0's file must)");
  c.trainer = first.trainer;
  const auto& step = c.trainer.contains("step") ? c.trainer["step"] : nlohmann::json();
  if (!step.is_number_integer() || step.get<long long>() != c.manifest.step) {
    throw std::runtime_error(first.path + ": trainer step " + step.dump() + " differs from the manifest's step " +
                             std::to_string(c.manifest.step) + " (" + c.manifest.path + ")");
  }
  for (const StoredFile& f : c.files) {
    if (f.units.size() != first.units.size()) {
      throw std::runtime_error(f.path + ": holds " + std::to_string(f.units.size()) + " units, " + first.path + " " +
                               std::to_string(first.units.size()));
    }
    for (std::size_t u = 0; u < f.units.size(); ++u) {
      if (f.units[u].name != first.units[u].name || f.units[u].numel != first.units[u].numel) {
        throw std::runtime_error(f.path + ": unit " + std::to_string(u) + " is " + f.units[u].name + " (" +
                                 std::to_string(f.units[u].numel) + "), in " + first.path + " " + first.units[u].name +
                                 " (" + std::to_string(first.units[u].numel) + ")");
      }
    }
  }
  // The files' ranges of a unit are disjoint, so that the elements a rank counts are the ones it needs.
  for (std::size_t u = 0; u < first.units.size(); ++u) {
    std::vector<std::pair<std::uint64_t, const StoredFile*>> starts;
    for (const StoredFile& f : c.files)
      if (f.units[u].count > 0) starts.emplace_back(f.units[u].offset, &f);
    std::sort(starts.begin(), starts.end());
    for (std::size_t i = 1; i < starts.size(); ++i) {
      const StoredUnit& prev = starts[i - 1].second->units[u];
      if (prev.offset + prev.count > starts[i].first) {
        throw std::runtime_error(starts[i].second->path + ": its range of " + first.units[u].name + " overlaps " +
                                 starts[i - 1].second->path + "'s");
      }
    }
  }
  return c;
}

}  // namespace

SavedCheckpoint save_checkpoint(const std::string& dir, long step, const nlohmann::json& trainer_state,
                                const ParamLayout& layout, ModelState& state) {
  Collectives& world = state.collectives();
  const int rank = world.rank(), W = world.size();
  // Rank 0 names the temporary folder, every rank writes its file into it, rank 0 completes it.
  std::uint32_t tag = rank == 0 ? static_cast<std::uint32_t>(::getpid()) : 0;
  world.broadcast(&tag, sizeof tag, 0);
  const fs::path final_dir = fs::path(dir) / checkpoint_folder_name(step);
  const fs::path tmp_dir = fs::path(dir) / (".tmp-" + checkpoint_folder_name(step) + "-" + std::to_string(tag));
  std::string error;
  if (rank == 0) {
    try {
      fs::create_directories(dir);
      // The space of an earlier failed save is needed for this one.
      remove_unfinished_writes(dir);
      fs::create_directories(tmp_dir);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) throw JobFailure(error);
  // From here a failure (a full disk) removes what this save wrote, so that the run can still
  // write its end and the disk is not left full.
  const auto abandon = [&](const std::string& why) {
    if (rank == 0) {
      std::error_code ec;
      fs::remove_all(tmp_dir, ec);
    }
    throw JobFailure(why);
  };

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
        meta["units"].push_back({{"name", layout.units[u].name},
                                 {"numel", layout.units[u].numel},
                                 {"offset", sh.offset},
                                 {"count", sh.count}});
      }
      StateFileWriter w((tmp_dir / state_file_name(rank)).string());
      const std::string meta_text = meta.dump();
      w.section("meta", meta_text.data(), meta_text.size());
      for (int u = 0; u < state.unit_count(); ++u) {
        const LocalShard sh = state.owned(u);
        HostCopy host(state.device(), sh.count);
        for (int k = 0; k < 3; ++k)
          w.section(layout.units[u].name + kUnitSectionSuffixes[k], host.from(sh.*kUnitFields[k]),
                    sizeof(float) * sh.count);
      }
      const auto [file_bytes, file_crc] = w.finish();
      record[0] = 1, record[1] = static_cast<double>(file_bytes), record[2] = file_crc;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) abandon(error);

  // The manifest is the completion marker: rank 0 writes it once every file is on disk.
  const std::vector<double> records = gather_values(world, {record[0], record[1], record[2]});
  std::uint64_t total = 0;
  std::vector<ListedFile> files;
  for (int r = 0; r < W; ++r) {
    if (records[3 * r] == 0) continue;
    files.push_back({state_file_name(r), r, static_cast<std::uint64_t>(records[3 * r + 1]),
                     static_cast<std::uint32_t>(records[3 * r + 2])});
    total += files.back().bytes;
  }
  if (rank == 0) {
    try {
      total += complete_folder(tmp_dir, final_dir, step, W, files);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) abandon(error);
  return {final_dir.string(), step, total};
}

std::string verify_checkpoint(const std::string& path) {
  try {
    const ReadCheckpoint c = read_checkpoint(path);
    for (const ListedFile& f : c.manifest.files) check_listed_file(path, f);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

nlohmann::json load_checkpoint(const std::string& path, const ParamLayout& layout, ModelState& state) {
  nlohmann::json trainer;
  std::string error;
  try {
    const ReadCheckpoint c = read_checkpoint(path);
    const StoredFile& first = c.files.front();
    if (first.units.size() != static_cast<std::size_t>(state.unit_count())) {
      throw std::runtime_error(first.path + ": holds " + std::to_string(first.units.size()) + " units, the model has " +
                               std::to_string(state.unit_count()));
    }
    for (int u = 0; u < state.unit_count(); ++u) {
      if (first.units[u].name != layout.units[u].name || first.units[u].numel != layout.units[u].numel) {
        throw std::runtime_error(first.path + ": unit " + first.units[u].name + " (" +
                                 std::to_string(first.units[u].numel) + " parameters) does not match the model's " +
                                 layout.units[u].name + " (" + std::to_string(layout.units[u].numel) + ")");
      }
    }
    trainer = c.trainer;

    // The files this rank reads from are checked whole before anything is copied.
    for (std::size_t f = 0; f < c.files.size(); ++f) {
      bool needed = false;
      for (int u = 0; u < state.unit_count(); ++u) {
        const LocalShard want = state.local(u);
        const StoredUnit& have = c.files[f].units[u];
        needed = needed ||
                 (have.count > 0 && have.offset < want.offset + want.count && want.offset < have.offset + have.count);
      }
      if (needed) check_listed_file(path, c.manifest.files[f]);
    }

    // Each local range is put together from the pieces of it the files hold.
    for (int u = 0; u < state.unit_count(); ++u) {
      const LocalShard want = state.local(u);
      std::size_t covered = 0;
      for (const StoredFile& file : c.files) {
        const StoredUnit& have = file.units[u];
        const std::size_t lo = std::max<std::size_t>(want.offset, have.offset),
                          hi = std::min<std::size_t>(want.offset + want.count, have.offset + have.count);
        if (lo >= hi) continue;
        const StateFileReader r(file.path);
        HostCopy host(state.device(), hi - lo);
        for (int k = 0; k < 3; ++k) {
          float* dst = want.*kUnitFields[k] + (lo - want.offset);
          r.floats(layout.units[u].name + kUnitSectionSuffixes[k], lo - have.offset, hi - lo, host.to(dst));
          host.upload(dst);
        }
        covered += hi - lo;
      }
      if (covered != want.count) {
        throw std::runtime_error(path + ": holds " + std::to_string(covered) + " of the " + std::to_string(want.count) +
                                 " elements of " + layout.units[u].name +
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
  const ReadCheckpoint c = read_checkpoint(path);
  // The units as the checkpoint names them: all a full copy of the state needs to know of the model.
  ParamLayout layout;
  for (const StoredUnit& u : c.files.front().units) {
    UnitLayout unit;
    unit.name = u.name;
    unit.numel = u.numel;
    layout.units.push_back(unit);
    layout.total += unit.numel;
  }
  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  const nlohmann::json trainer = load_checkpoint(path, layout, whole);
  return save_checkpoint(out_dir, c.manifest.step, trainer, layout, whole);
}

std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<long, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    long step = -1;
    // A folder, not a symbolic link to one: a checkpoint's files are its own.
    if (e.is_directory(ec) && !e.is_symlink(ec) && std::sscanf(name.c_str(), "step-%ld", &step) == 1 && step >= 0 &&
        name == checkpoint_folder_name(step))
      out.emplace_back(step, e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

void prune_checkpoints(const std::string& dir, int keep_last_n) {
  const auto all = list_checkpoints(dir);
  for (std::size_t i = static_cast<std::size_t>(keep_last_n); i < all.size(); ++i) fs::remove_all(all[i].second);
  remove_unfinished_writes(dir);
}

void remove_unfinished_writes(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".old-", 0) == 0) stale.push_back(e.path());
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

}  // namespace fsdp

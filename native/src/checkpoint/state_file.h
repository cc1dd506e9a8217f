// A checkpoint's state file (rank-NNNNN.bin, native/FORMATS.md): magic, version, payload size and
// CRC-32, then named sections. Nothing read from one is trusted: files are opened only when they
// are regular files (never through a symbolic link), every size is checked against the file's
// with arithmetic that cannot overflow, and every error names the file.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/files.h"

namespace fsdp {

constexpr std::size_t kStateHeaderBytes =
    32;  // magic, version u32, reserved u32, payload bytes u64, payload CRC-32 u32, reserved u32

std::uint32_t crc32_of(const char* data, std::size_t n, std::uint32_t crc = 0);

/** CRC-32 of a file's bytes from `offset` to its end, read in pieces (checkpoints can be gigabytes). */
std::uint32_t file_crc32(const ReadOnlyFile& file, std::uint64_t offset = 0);

/** Checks a state file's header, size and payload checksum; throws naming the path. */
void check_state_file(const std::string& path);

/** Writes a state file section by section, keeping the payload's CRC; the header goes in last. */
class StateFileWriter {
 public:
  explicit StateFileWriter(const std::string& path);
  ~StateFileWriter();
  StateFileWriter(const StateFileWriter&) = delete;
  StateFileWriter& operator=(const StateFileWriter&) = delete;
  /** A named section: u16 name length, name, u64 byte count, bytes. */
  void section(const std::string& name, const void* data, std::size_t n);
  /** Writes the header and flushes to disk; returns the file's size and the CRC of the whole file. */
  std::pair<std::uint64_t, std::uint32_t> finish();

 private:
  void raw(const void* data, std::size_t n);
  void write_at(std::uint64_t at, const void* data, std::size_t n);
  std::string path_;
  int fd_ = -1;
  std::uint32_t crc_ = 0;
  std::uint64_t bytes_ = 0;
};

/** Where each section of a state file is, so that any range of any section can be read. */
class StateFileReader {
 public:
  explicit StateFileReader(const std::string& path);
  const std::string& path() const { return file_.path(); }
  bool has(const std::string& name) const;
  /** Byte count of a section; throws naming the file when there is none of that name. */
  std::uint64_t bytes(const std::string& name) const;
  std::string text(const std::string& name) const;
  /** Elements [first, first + count) of a float32 section. */
  void floats(const std::string& name, std::uint64_t first, std::uint64_t count, float* dst) const;

 private:
  std::pair<std::uint64_t, std::uint64_t> find(const std::string& name) const;
  ReadOnlyFile file_;
  std::vector<std::pair<std::string, std::pair<std::uint64_t, std::uint64_t>>> sections_;
};

/** The sections of each unit, in their order: the parameters, then AdamW's two moments (float32, the range). */
constexpr const char* kUnitSectionSuffixes[3] = {"/params", "/adam_m", "/adam_v"};

/** One unit's range in a state file: elements [offset, offset + count) of a unit of numel elements. */
struct StoredUnit {
  std::string name;
  std::uint64_t numel = 0, offset = 0, count = 0;
};

/** A state file's meta section, checked against itself, its sections and what the manifest says of it. */
struct StoredFile {
  std::string path;
  int rank = 0;
  nlohmann::json trainer;  // rank 0's file only; null elsewhere
  std::vector<StoredUnit> units;
};

/**
 * Reads and checks the meta of the state file at `path`, listed in the manifest as rank `rank`
 * of `world_size` ranks: its rank and world size, every unit's range within the unit and the
 * sizes of its three sections. Throws std::runtime_error naming the file and the field.
 */
StoredFile read_stored_file(const std::string& path, int rank, int world_size);

}  // namespace fsdp

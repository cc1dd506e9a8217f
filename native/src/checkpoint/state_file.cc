#include "checkpoint/state_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

namespace fsdp {

namespace {

constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
// More ranks than any job has: a world size beyond it is a damaged or hostile file.
constexpr long long kMaxWorldSize = 1 << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

/** j[key] as a whole number in [lo, hi]; throws naming the file and the field otherwise. */
std::uint64_t whole(const nlohmann::json& j, const char* key, std::uint64_t lo, std::uint64_t hi,
                    const std::string& path, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail(path, where + key + " is missing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
    fail(path, where + key + " is " + v.dump() + ", not a whole number");
  const std::uint64_t x = v.get<std::uint64_t>();
  if (x < lo || x > hi)
    fail(path, where + key + " is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
  return x;
}

}  // namespace

std::uint32_t crc32_of(const char* data, std::size_t n, std::uint32_t crc) {
  uLong c = crc;
  while (n > 0) {
    const uInt piece = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data), piece);
    data += piece, n -= piece;
  }
  return static_cast<std::uint32_t>(c);
}

std::uint32_t file_crc32(const ReadOnlyFile& file, std::uint64_t offset) {
  std::vector<char> buf(1 << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t at = offset;;) {
    const std::size_t n = file.read_some(at, buf.data(), buf.size());
    if (n == 0) return crc;
    crc = crc32_of(buf.data(), n, crc);
    at += n;
  }
}

void check_state_file(const std::string& path) {
  const ReadOnlyFile file(path, false);
  char header[kStateHeaderBytes] = {};
  if (file.read_some(0, header, kStateHeaderBytes) != kStateHeaderBytes || std::memcmp(header, kMagic, 8) != 0)
    fail(path, "not a checkpoint state file (bad magic)");
  std::uint32_t version, crc;
  std::uint64_t payload;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&payload, header + 16, 8);
  std::memcpy(&crc, header + 24, 4);
  if (version != kVersion) fail(path, "unsupported checkpoint version " + std::to_string(version));
  if (payload != file.size() - kStateHeaderBytes) {
    fail(path, std::to_string(file.size()) + " bytes, the header says " + std::to_string(payload) + " after its " +
                   std::to_string(kStateHeaderBytes) + " (truncated or corrupted)");
  }
  if (file_crc32(file, kStateHeaderBytes) != crc) fail(path, "checksum mismatch (corrupted)");
}

StateFileWriter::StateFileWriter(const std::string& path) : path_(path) {
  fd_ = open_regular_for_writing(path, O_WRONLY | O_CREAT | O_TRUNC);
  const char zeros[kStateHeaderBytes] = {};
  write_at(0, zeros, kStateHeaderBytes);
}

StateFileWriter::~StateFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void StateFileWriter::section(const std::string& name, const void* data, std::size_t n) {
  const auto len = static_cast<std::uint16_t>(name.size());
  const std::uint64_t count = n;
  raw(&len, 2);
  raw(name.data(), name.size());
  raw(&count, 8);
  raw(data, n);
}

std::pair<std::uint64_t, std::uint32_t> StateFileWriter::finish() {
  char header[kStateHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  std::memcpy(header + 8, &kVersion, 4);
  std::memcpy(header + 16, &bytes_, 8);
  std::memcpy(header + 24, &crc_, 4);
  write_at(0, header, kStateHeaderBytes);
  if (::fsync(fd_) != 0) fail(path_, std::string("fsync failed: ") + std::strerror(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(path_, std::string("close failed: ") + std::strerror(errno));
  const ReadOnlyFile written(path_, false);
  return {kStateHeaderBytes + bytes_, file_crc32(written)};
}

void StateFileWriter::raw(const void* data, std::size_t n) {
  write_at(kStateHeaderBytes + bytes_, data, n);
  crc_ = crc32_of(static_cast<const char*>(data), n, crc_);
  bytes_ += n;
}

void StateFileWriter::write_at(std::uint64_t at, const void* data, std::size_t n) {
  for (std::size_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(fd_, static_cast<const char*>(data) + done, n - done, static_cast<off_t>(at + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path_, std::string("write failed: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(w);
  }
}

StateFileReader::StateFileReader(const std::string& path) : file_(path, false) {
  const std::uint64_t size = file_.size();
  std::set<std::string> seen;
  for (std::uint64_t at = kStateHeaderBytes; at < size;) {
    std::uint16_t len = 0;
    if (size - at < 2) fail(path, "a section header runs past the end (truncated)");
    file_.read_at(at, &len, 2);
    at += 2;
    if (size - at < std::uint64_t{len} + 8) fail(path, "a section header runs past the end (truncated)");
    std::string name(len, '\0');
    file_.read_at(at, name.data(), len);
    std::uint64_t bytes = 0;
    file_.read_at(at + len, &bytes, 8);
    at += len + 8;
    if (bytes > size - at) fail(path, "section " + name + " runs past the end (truncated)");
    if (!seen.insert(name).second) fail(path, "section " + name + " appears twice");
    sections_.emplace_back(name, std::make_pair(at, bytes));
    at += bytes;
  }
}

bool StateFileReader::has(const std::string& name) const {
  return std::any_of(sections_.begin(), sections_.end(), [&](const auto& s) { return s.first == name; });
}

std::uint64_t StateFileReader::bytes(const std::string& name) const {
  return find(name).second;
}

std::string StateFileReader::text(const std::string& name) const {
  const auto [at, bytes] = find(name);
  std::string s(bytes, '\0');
  file_.read_at(at, s.data(), bytes);
  return s;
}

void StateFileReader::floats(const std::string& name, std::uint64_t first, std::uint64_t count, float* dst) const {
  const auto [at, bytes] = find(name);
  const std::uint64_t have = bytes / sizeof(float);
  if (count > have || first > have - count) fail(path(), "section " + name + " is shorter than its unit's range");
  file_.read_at(at + sizeof(float) * first, dst, sizeof(float) * count);
}

std::pair<std::uint64_t, std::uint64_t> StateFileReader::find(const std::string& name) const {
  for (const auto& [n, where] : sections_)
    if (n == name) return where;
  fail(path(), "no section " + name);
}

StoredFile read_stored_file(const std::string& path, int rank, int world_size) {
  const StateFileReader r(path);
  StoredFile f;
  f.path = path;
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(r.text("meta"));
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("section meta is not valid JSON: ") + e.what());
  }
  if (!meta.is_object()) fail(path, "section meta is not a JSON object");
  f.rank = static_cast<int>(whole(meta, "rank", 0, kMaxWorldSize - 1, path, "meta "));
  if (f.rank != rank)
    fail(path, "meta says rank " + std::to_string(f.rank) + ", the manifest lists it as rank " + std::to_string(rank));
  const auto ws = whole(meta, "world_size", 1, kMaxWorldSize, path, "meta ");
  if (ws != static_cast<std::uint64_t>(world_size))
    fail(path, "meta says world size " + std::to_string(ws) + ", the manifest " + std::to_string(world_size));
  if (!meta.contains("units") || !meta["units"].is_array()) fail(path, "meta units is missing or not an array");
  for (const auto& u : meta["units"]) {
    StoredUnit unit;
    if (!u.is_object() || !u.contains("name") || !u["name"].is_string()) fail(path, "meta has a unit without a name");
    unit.name = u["name"].get<std::string>();
    const std::string where = "unit " + unit.name + " ";
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max() / 4;  // bytes of float32 must fit
    unit.numel = whole(u, "numel", 0, kMax, path, where);
    unit.offset = whole(u, "offset", 0, unit.numel, path, where);
    unit.count = whole(u, "count", 0, unit.numel - unit.offset, path, where);
    for (const char* suffix : kUnitSectionSuffixes) {
      const std::string section = unit.name + suffix;
      if (r.bytes(section) != sizeof(float) * unit.count) {
        fail(path, "section " + section + " holds " + std::to_string(r.bytes(section)) + " bytes, the unit's range " +
                       std::to_string(sizeof(float) * unit.count));
      }
    }
    f.units.push_back(std::move(unit));
  }
  if (meta.contains("trainer")) {
    if (!meta["trainer"].is_object()) fail(path, "meta trainer is not a JSON object");
    f.trainer = meta["trainer"];
  }
  return f;
}

}  // namespace fsdp

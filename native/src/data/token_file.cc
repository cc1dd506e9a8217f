#include "data/token_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "runtime/files.h"

namespace fsdp {

namespace {

constexpr std::size_t kHeaderBytes = 64;
constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'T', 'O', 'K', '\0'};
// uint16 tokens: ids 0 … 65535.
constexpr std::uint64_t kMaxVocab = 65536;
// Header plus 2 bytes a token must fit in 64 bits (and in this process's address space).
constexpr std::uint64_t kMaxTokens = (std::numeric_limits<std::uint64_t>::max() - kHeaderBytes) / 2;
// Tokens checked per piece: the checksum and the id scan share the piece while it is in cache.
constexpr std::uint64_t kPieceTokens = 1 << 16;

std::uint32_t u32(const unsigned char* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
std::uint64_t u64(const unsigned char* p) {
  return u32(p) | static_cast<std::uint64_t>(u32(p + 4)) << 32;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

TokenFileHeader parse_header(const std::string& path, const unsigned char* h, std::uint64_t file_bytes) {
  if (file_bytes < kHeaderBytes) {
    // A file cut short inside its header still begins as a token file does: say it is truncated.
    const std::size_t present = static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, sizeof kMagic));
    if (std::memcmp(h, kMagic, present) == 0) {
      fail(path, std::to_string(file_bytes) + " bytes, shorter than the " + std::to_string(kHeaderBytes) +
                     "-byte header of a token file (truncated)");
    }
    fail(path, "not a token file (bad magic)");
  }
  if (std::memcmp(h, kMagic, 8) != 0) fail(path, "not a token file (bad magic)");
  TokenFileHeader hd;
  hd.version = u32(h + 8);
  if (hd.version != 1) fail(path, "unsupported token file version " + std::to_string(hd.version));
  if (u32(h + 12) != 1) fail(path, "unsupported token dtype " + std::to_string(u32(h + 12)) + " (1 = uint16)");
  hd.token_count = u64(h + 16);
  hd.vocab_size = u32(h + 24);
  hd.crc32 = u32(h + 28);
  hd.tokenizer.assign(reinterpret_cast<const char*>(h + 32), strnlen(reinterpret_cast<const char*>(h + 32), 16));
  if (hd.vocab_size == 0) fail(path, "the header's vocabulary size is 0 (no token id can be valid)");
  if (hd.vocab_size > kMaxVocab)
    fail(path,
         "the header's vocabulary size " + std::to_string(hd.vocab_size) + " exceeds what uint16 tokens hold (65536)");
  if (hd.token_count > kMaxTokens || kHeaderBytes + 2 * hd.token_count != file_bytes) {
    const std::string expected =
        hd.token_count > kMaxTokens ? "more than any file can hold" : std::to_string(kHeaderBytes + 2 * hd.token_count);
    fail(path, std::to_string(file_bytes) + " bytes, expected " + expected + " for the " +
                   std::to_string(hd.token_count) + " tokens the header declares (truncated or corrupted?)");
  }
  return hd;
}

}  // namespace

TokenFileHeader read_token_file_header(const std::string& path) {
  const ReadOnlyFile file(path);
  unsigned char h[kHeaderBytes] = {};
  const std::size_t n = file.read_some(0, h, kHeaderBytes);
  return parse_header(path, h, n < kHeaderBytes ? n : file.size());
}

TokenFile::TokenFile(const std::string& path, std::uint32_t model_vocab) : file_(path) {
  const ReadOnlyFile::Stat opened = file_.stat();
  opened_mtime_ns_ = opened.mtime_ns;
  unsigned char h[kHeaderBytes] = {};
  const std::size_t got = file_.read_some(0, h, kHeaderBytes);
  header_ = parse_header(path, h, got < kHeaderBytes ? got : opened.size);
  id_limit_ = std::min<std::uint32_t>(header_.vocab_size, model_vocab);
  if (id_limit_ == 0) fail(path, "model vocabulary size is 0");
  // zlib's crc32 takes a uInt length; the payload goes in pieces, each also scanned for its
  // largest id (a vectorised max) while it is in cache. The checksum is compared first, so a
  // corrupted file is reported as corrupted rather than by the id the corruption made.
  std::vector<std::uint16_t> piece(static_cast<std::size_t>(std::min(kPieceTokens, header_.token_count)));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint16_t largest = 0;
  std::uint64_t largest_at = 0;
  for (std::uint64_t first = 0; first < header_.token_count; first += kPieceTokens) {
    const std::uint64_t n = std::min(kPieceTokens, header_.token_count - first);
    if (file_.read_some(kHeaderBytes + 2 * first, piece.data(), static_cast<std::size_t>(2 * n)) != 2 * n) {
      check_unchanged();
      fail(path, "ends before token " + std::to_string(first + n) + " although its size did not change");
    }
    crc = crc32(crc, reinterpret_cast<const Bytef*>(piece.data()), static_cast<uInt>(2 * n));
    std::uint16_t m = 0;
    for (std::uint64_t i = 0; i < n; ++i) m = std::max(m, piece[i]);
    if (m > largest) largest = m, largest_at = first;
  }
  check_unchanged();
  if (static_cast<std::uint32_t>(crc) != header_.crc32) fail(path, "checksum mismatch (corrupted)");
  if (header_.token_count > 0 && largest >= id_limit_) {
    const std::uint64_t n = std::min(kPieceTokens, header_.token_count - largest_at);
    file_.read_at(kHeaderBytes + 2 * largest_at, piece.data(), static_cast<std::size_t>(2 * n));
    check_ids(largest_at, n, piece.data());
  }
}

void TokenFile::read(std::uint64_t first, std::uint64_t n, std::uint16_t* dst) const {
  if (first > header_.token_count || n > header_.token_count - first) {
    throw std::out_of_range(path() + ": tokens " + std::to_string(first) + " to " + std::to_string(first + n) +
                            " asked of a file of " + std::to_string(header_.token_count));
  }
  const std::size_t got = file_.read_some(kHeaderBytes + 2 * first, dst, static_cast<std::size_t>(2 * n));
  // After the read: a change made before it completed is seen now, one made later at the next read.
  check_unchanged();
  if (got != 2 * n)
    fail(path(), "ends before token " + std::to_string(first + n) + " although its size did not change");
  std::uint16_t largest = 0;
  for (std::uint64_t i = 0; i < n; ++i) largest = std::max(largest, dst[i]);
  if (largest >= id_limit_) check_ids(first, n, dst);
}

void TokenFile::check_unchanged() const {
  const ReadOnlyFile::Stat now = file_.stat();
  const std::uint64_t opened_size = kHeaderBytes + 2 * header_.token_count;
  if (now.size == opened_size && now.mtime_ns == opened_mtime_ns_) return;
  const std::string what =
      now.size != opened_size
          ? std::to_string(opened_size) + " bytes when the run opened it, " + std::to_string(now.size) + " now"
          : "modified " + std::to_string(static_cast<double>(now.mtime_ns - opened_mtime_ns_) / 1e9) +
                " s after the run opened it";
  fail(path(), "changed while the run was reading it (" + what +
                   "): a program rewrote it in place; write token files to a temporary file and rename it over the old "
                   "one, as samples/prepare-data.ts does, and restart the run");
}

void TokenFile::check_ids(std::uint64_t first, std::uint64_t n, const std::uint16_t* tokens) const {
  for (std::uint64_t i = 0; i < n; ++i) {
    if (tokens[i] < id_limit_) continue;
    const bool model_smaller = id_limit_ < header_.vocab_size;
    fail(path(), "token " + std::to_string(first + i) + " is id " + std::to_string(tokens[i]) +
                     ", not below the vocabulary size " + std::to_string(id_limit_) +
                     (model_smaller ? " (model.vocab_size)" : " (the file's header)") +
                     ": the file is corrupted or was made for another tokenizer");
  }
}

}  // namespace fsdp

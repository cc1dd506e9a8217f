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
// The dtype field: 1 = uint16 ids (0 … 65535), 2 = uint32 ids (vocabularies past 65,536: Llama 3's 128,256).
constexpr std::uint32_t kDtypeUint16 = 1;
constexpr std::uint32_t kDtypeUint32 = 2;
constexpr std::uint64_t kMaxVocab16 = 65536;
// Tokens checked per piece: the checksum and the id scan share the piece while it is in cache.
constexpr std::uint64_t kPieceTokens = 1 << 16;

std::uint32_t u32(const unsigned char* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
std::uint64_t u64(const unsigned char* p) {
  return u32(p) | static_cast<std::uint64_t>(u32(p + 4)) << 32;
}

/** Ids [0, n) of `bytes` (little-endian, `width` bytes each) widened into dst; returns the largest. */
std::uint32_t widen(const unsigned char* bytes, unsigned width, std::uint64_t n, std::uint32_t* dst) {
  std::uint32_t largest = 0;
  if (width == 2) {
    for (std::uint64_t i = 0; i < n; ++i) {
      dst[i] = static_cast<std::uint32_t>(bytes[2 * i] | bytes[2 * i + 1] << 8);
      largest = std::max(largest, dst[i]);
    }
  } else {
    for (std::uint64_t i = 0; i < n; ++i) {
      dst[i] = u32(bytes + 4 * i);
      largest = std::max(largest, dst[i]);
    }
  }
  return largest;
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
  const std::uint32_t dtype = u32(h + 12);
  if (dtype != kDtypeUint16 && dtype != kDtypeUint32)
    fail(path, "unsupported token dtype " + std::to_string(dtype) + " (1 = uint16, 2 = uint32)");
  hd.bytes_per_token = dtype == kDtypeUint16 ? 2 : 4;
  hd.token_count = u64(h + 16);
  hd.vocab_size = u32(h + 24);
  hd.crc32 = u32(h + 28);
  hd.tokenizer.assign(reinterpret_cast<const char*>(h + 32), strnlen(reinterpret_cast<const char*>(h + 32), 16));
  if (hd.vocab_size == 0) fail(path, "the header's vocabulary size is 0 (no token id can be valid)");
  if (dtype == kDtypeUint16 && hd.vocab_size > kMaxVocab16)
    fail(path,
         "the header's vocabulary size " + std::to_string(hd.vocab_size) + " exceeds what uint16 tokens hold (65536)");
  // Header plus the tokens' bytes must fit in 64 bits (and in this process's address space).
  const std::uint64_t max_tokens = (std::numeric_limits<std::uint64_t>::max() - kHeaderBytes) / hd.bytes_per_token;
  if (hd.token_count > max_tokens || kHeaderBytes + hd.bytes_per_token * hd.token_count != file_bytes) {
    const std::string expected = hd.token_count > max_tokens
                                     ? "more than any file can hold"
                                     : std::to_string(kHeaderBytes + hd.bytes_per_token * hd.token_count);
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
  const unsigned width = header_.bytes_per_token;
  const std::size_t piece_tokens = static_cast<std::size_t>(std::min(kPieceTokens, header_.token_count));
  std::vector<unsigned char> piece(piece_tokens * width);
  std::vector<std::uint32_t> ids(piece_tokens);
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint32_t largest = 0;
  std::uint64_t largest_at = 0;
  for (std::uint64_t first = 0; first < header_.token_count; first += kPieceTokens) {
    const std::uint64_t n = std::min(kPieceTokens, header_.token_count - first);
    if (file_.read_some(kHeaderBytes + width * first, piece.data(), static_cast<std::size_t>(width * n)) != width * n) {
      check_unchanged();
      fail(path, "ends before token " + std::to_string(first + n) + " although its size did not change");
    }
    crc = crc32(crc, piece.data(), static_cast<uInt>(width * n));
    const std::uint32_t m = widen(piece.data(), width, n, ids.data());
    if (m > largest) largest = m, largest_at = first;
  }
  check_unchanged();
  if (static_cast<std::uint32_t>(crc) != header_.crc32) fail(path, "checksum mismatch (corrupted)");
  if (header_.token_count > 0 && largest >= id_limit_) {
    const std::uint64_t n = std::min(kPieceTokens, header_.token_count - largest_at);
    file_.read_at(kHeaderBytes + width * largest_at, piece.data(), static_cast<std::size_t>(width * n));
    widen(piece.data(), width, n, ids.data());
    check_ids(largest_at, n, ids.data());
  }
}

void TokenFile::read(std::uint64_t first, std::uint64_t n, std::uint32_t* dst) const {
  if (first > header_.token_count || n > header_.token_count - first) {
    throw std::out_of_range(path() + ": tokens " + std::to_string(first) + " to " + std::to_string(first + n) +
                            " asked of a file of " + std::to_string(header_.token_count));
  }
  const unsigned width = header_.bytes_per_token;
  // The file's bytes land in the back of dst's own storage (n x 4 bytes) and are widened front to back: an id's
  // 4-byte slot never overlaps a narrower id not yet read (for width 2: slot i ends at 4i + 4 <= 2n + 2i + 2).
  unsigned char* raw = reinterpret_cast<unsigned char*>(dst) + (4 - width) * n;
  const std::size_t got = file_.read_some(kHeaderBytes + width * first, raw, static_cast<std::size_t>(width * n));
  // After the read: a change made before it completed is seen now, one made later at the next read.
  check_unchanged();
  if (got != width * n)
    fail(path(), "ends before token " + std::to_string(first + n) + " although its size did not change");
  const std::uint32_t largest = widen(raw, width, n, dst);
  if (largest >= id_limit_) check_ids(first, n, dst);
}

void TokenFile::check_unchanged() const {
  const ReadOnlyFile::Stat now = file_.stat();
  const std::uint64_t opened_size = kHeaderBytes + header_.bytes_per_token * header_.token_count;
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

void TokenFile::check_ids(std::uint64_t first, std::uint64_t n, const std::uint32_t* tokens) const {
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

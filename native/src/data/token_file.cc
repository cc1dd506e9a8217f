#include "data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace fsdp {

namespace {

constexpr std::size_t kHeaderBytes = 64;
constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'T', 'O', 'K', '\0'};

std::uint32_t u32(const unsigned char* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24; }
std::uint64_t u64(const unsigned char* p) { return u32(p) | static_cast<std::uint64_t>(u32(p + 4)) << 32; }

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw std::runtime_error(path + ": " + what); }

TokenFileHeader parse_header(const std::string& path, const unsigned char* h, std::uint64_t file_bytes) {
  if (file_bytes < kHeaderBytes || std::memcmp(h, kMagic, 8) != 0) fail(path, "not a token file (bad magic)");
  TokenFileHeader hd;
  hd.version = u32(h + 8);
  if (hd.version != 1) fail(path, "unsupported token file version " + std::to_string(hd.version));
  if (u32(h + 12) != 1) fail(path, "unsupported token dtype " + std::to_string(u32(h + 12)) + " (1 = uint16)");
  hd.token_count = u64(h + 16);
  hd.vocab_size = u32(h + 24);
  hd.crc32 = u32(h + 28);
  hd.tokenizer.assign(reinterpret_cast<const char*>(h + 32), strnlen(reinterpret_cast<const char*>(h + 32), 16));
  const std::uint64_t expected = kHeaderBytes + 2 * hd.token_count;
  if (file_bytes != expected) {
    fail(path, std::to_string(file_bytes) + " bytes, expected " + std::to_string(expected) + " for " + std::to_string(hd.token_count) + " tokens (truncated?)");
  }
  return hd;
}

int open_or_fail(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  return fd;
}

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) fail(path, std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace

TokenFileHeader read_token_file_header(const std::string& path) {
  const int fd = open_or_fail(path);
  unsigned char h[kHeaderBytes] = {};
  const std::uint64_t size = file_size(fd, path);
  const ssize_t n = ::pread(fd, h, kHeaderBytes, 0);
  ::close(fd);
  if (n < 0) fail(path, std::strerror(errno));
  return parse_header(path, h, n < static_cast<ssize_t>(kHeaderBytes) ? static_cast<std::uint64_t>(n) : size);
}

TokenFile::TokenFile(const std::string& path) : path_(path) {
  const int fd = open_or_fail(path);
  const std::uint64_t size = file_size(fd, path);
  if (size < kHeaderBytes) {
    ::close(fd);
    fail(path, "not a token file (bad magic)");
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (addr == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(map_errno));
  map_.addr = addr;
  map_.bytes = size;
  const auto* bytes = static_cast<const unsigned char*>(addr);
  header_ = parse_header(path, bytes, size);
  tokens_ = reinterpret_cast<const std::uint16_t*>(bytes + kHeaderBytes);
  // zlib's crc32 takes a uInt length; feed the payload in pieces.
  uLong crc = crc32(0L, Z_NULL, 0);
  const unsigned char* payload = bytes + kHeaderBytes;
  for (std::uint64_t left = 2 * header_.token_count; left > 0;) {
    const uInt piece = static_cast<uInt>(std::min<std::uint64_t>(left, 1u << 30));
    crc = crc32(crc, payload, piece);
    payload += piece, left -= piece;
  }
  if (static_cast<std::uint32_t>(crc) != header_.crc32) fail(path, "checksum mismatch (corrupted)");
}

TokenFile::Mapping::~Mapping() {
  if (addr) ::munmap(addr, bytes);
}

}  // namespace fsdp

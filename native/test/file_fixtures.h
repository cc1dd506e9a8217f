// Files for the native tests: a temporary folder removed with everything in it, a token file
// written in the format of native/FORMATS.md (any header fields, so tests can lie in them), and a
// deterministic random source for fuzzing.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fsdp::test {

struct TempFolder {
  std::filesystem::path path;
  /** in_memory: under /dev/shm where there is one (fuzz tests write thousands of small files). */
  explicit TempFolder(bool in_memory = false) {
    const std::filesystem::path base =
        in_memory && std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = base / ("fsdp-gtest-" + std::to_string(::getpid()) + "-f" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  static inline int counter = 0;
};

struct TokenFileFields {
  std::uint32_t version = 1, dtype = 1, vocab = 256;
  std::uint64_t count = 0;  // the tokens' count when 0 and count_set is false
  bool count_set = false;
  bool crc_right = true;
};

/** The bytes of a token file holding `tokens`, with the header's fields as given. */
inline std::string token_file_bytes(const std::vector<std::uint16_t>& tokens, const TokenFileFields& f = {}) {
  std::string out(64, '\0');
  const std::uint64_t count = f.count_set ? f.count : tokens.size();
  std::uint32_t crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(tokens.data()), static_cast<uInt>(2 * tokens.size())));
  if (!f.crc_right) crc ^= 1;
  std::memcpy(out.data(), "FSDPTOK\0", 8);
  std::memcpy(out.data() + 8, &f.version, 4);
  std::memcpy(out.data() + 12, &f.dtype, 4);
  std::memcpy(out.data() + 16, &count, 8);
  std::memcpy(out.data() + 24, &f.vocab, 4);
  std::memcpy(out.data() + 28, &crc, 4);
  std::memcpy(out.data() + 32, "byte", 4);
  out.append(reinterpret_cast<const char*>(tokens.data()), 2 * tokens.size());
  return out;
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/** splitmix64: reproducible mutations from a seed. */
struct FuzzRng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

}  // namespace fsdp::test

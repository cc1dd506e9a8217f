// Token files (native/FORMATS.md): a 64-byte self-describing header, then uint16 tokens. Mapped
// read-only, so the OS page cache holds them (they are not runtime allocations; see MEMORY.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace fsdp {

struct TokenFileHeader {
  std::uint32_t version = 0;
  std::uint64_t token_count = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t crc32 = 0;
  std::string tokenizer;
};

/** Reads and checks the header only (cheap): magic, version, dtype, and that the size matches. */
TokenFileHeader read_token_file_header(const std::string& path);

class TokenFile {
 public:
  /** Maps the file and verifies its checksum; throws std::runtime_error naming the path and the fault. */
  explicit TokenFile(const std::string& path);
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const TokenFileHeader& header() const { return header_; }
  const std::uint16_t* tokens() const { return tokens_; }
  std::uint64_t size() const { return header_.token_count; }
  const std::string& path() const { return path_; }

 private:
  /** A read-only mapping, unmapped when destroyed (also when the constructor throws). */
  struct Mapping {
    void* addr = nullptr;
    std::size_t bytes = 0;
    ~Mapping();
  };
  std::string path_;
  Mapping map_;
  TokenFileHeader header_;
  const std::uint16_t* tokens_ = nullptr;
};

}  // namespace fsdp

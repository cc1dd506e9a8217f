// Token files (native/FORMATS.md): a 64-byte self-describing header, then uint16 tokens. Mapped
// read-only, so the OS page cache holds them (they are not runtime allocations; see MEMORY.md).
//
// Nothing in a token file is trusted: the header's fields are checked with arithmetic that cannot
// overflow, only regular files are opened (a FIFO or a device would block or never end), and every
// token id is checked against the vocabulary the model has — once when the file is opened (in the
// same pass as the checksum) and again as each batch is built (BatchStream::read), because the
// ids index the embedding table and the loss's logits directly, on the CPU and on the GPU alike.
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

/** Reads and checks the header only (cheap, never blocks): magic, version, dtype, vocabulary, and that the size matches. */
TokenFileHeader read_token_file_header(const std::string& path);

class TokenFile {
 public:
  /**
   * Maps the file, verifies its checksum and that every id is below min(header vocabulary,
   * model_vocab); throws std::runtime_error naming the path and the fault.
   */
  TokenFile(const std::string& path, std::uint32_t model_vocab);
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const TokenFileHeader& header() const { return header_; }
  const std::uint16_t* tokens() const { return tokens_; }
  std::uint64_t size() const { return header_.token_count; }
  const std::string& path() const { return path_; }
  /** Every id a batch may hold is below this: the smaller of the file's and the model's vocabulary. */
  std::uint32_t id_limit() const { return id_limit_; }

  /** Throws naming the file, the position and the id when tokens [first, first + n) hold an id not below id_limit(). */
  void check_ids(std::uint64_t first, std::uint64_t n) const;

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
  std::uint32_t id_limit_ = 0;
};

}  // namespace fsdp

// Token files (native/FORMATS.md): a 64-byte self-describing header, then uint16 or uint32 tokens (the dtype field).
// Read with pread, so the OS page cache holds them (they are not runtime allocations; see MEMORY.md) and a file changed
// under a running trainer is an error naming it, never a SIGBUS: a mapping of a file another program truncates faults
// on the next page it touches.
//
// Nothing in a token file is trusted: the header's fields are checked with arithmetic that cannot
// overflow, only regular files are opened (a FIFO or a device would block or never end), and every
// token id is checked against the vocabulary the model has — once when the file is opened (in the
// same pass as the checksum) and again as each batch is built (BatchStream::read), because the
// ids index the embedding table and the loss's logits directly, on the CPU and on the GPU alike.
// The file's size and modification time are compared with those it had when opened at every read:
// the writers of token files write a temporary file and rename it over the old one, which leaves a
// running trainer reading the file it opened.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/files.h"

namespace fsdp {

struct TokenFileHeader {
  std::uint32_t version = 0;
  std::uint64_t token_count = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t crc32 = 0;
  std::string tokenizer;
  unsigned bytes_per_token = 2;  // the dtype field: 1 = uint16, 2 = uint32
};

/** Reads and checks the header only (cheap, never blocks): magic, version, dtype, vocabulary, and that the size
 * matches. */
TokenFileHeader read_token_file_header(const std::string& path);

class TokenFile {
 public:
  /**
   * Opens the file, verifies its checksum and that every id is below min(header vocabulary,
   * model_vocab); throws std::runtime_error naming the path and the fault.
   */
  TokenFile(const std::string& path, std::uint32_t model_vocab);
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const TokenFileHeader& header() const { return header_; }
  std::uint64_t size() const { return header_.token_count; }
  const std::string& path() const { return file_.path(); }
  /** Every id a batch may hold is below this: the smaller of the file's and the model's vocabulary. */
  std::uint32_t id_limit() const { return id_limit_; }

  /**
   * Copies tokens [first, first + n) into dst. Throws naming the file when it is not the file that
   * was opened any more (truncated or rewritten in place) or one of them is not below id_limit().
   * Safe to call from several threads.
   */
  void read(std::uint64_t first, std::uint64_t n, std::uint32_t* dst) const;

 private:
  /** Throws naming the file, its size and time then and now, when it changed since it was opened. */
  void check_unchanged() const;
  /** Throws naming the file, the position and the id when tokens[0, n), which are tokens [first, first + n) of the
   * file, hold an id not below id_limit(). */
  void check_ids(std::uint64_t first, std::uint64_t n, const std::uint32_t* tokens) const;

  ReadOnlyFile file_;
  TokenFileHeader header_;
  std::uint32_t id_limit_ = 0;
  std::int64_t opened_mtime_ns_ = 0;
};

}  // namespace fsdp

// The safetensors format (Hugging Face's model files): a u64 little-endian header size N, N bytes
// of JSON naming each tensor's dtype, shape and [begin, end) byte range in the data that follows,
// then the data. Written by the runtime for Hugging Face exports; read for imports, where the file
// is not trusted: only a regular file is opened (not through a symbolic link), the header's size
// is bounded, every tensor's dtype, shape and range is checked (inside the data, the size its
// shape says, no two overlapping), and every error names the file and the tensor.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsdp {

/** A float32 tensor to write: its name, shape and row-major values. */
struct TensorToWrite {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* data = nullptr;
};

/**
 * Writes `tensors` (float32) as a safetensors file at `path`, atomically (a temporary file in the
 * same folder, flushed, renamed), with `metadata` as the header's string map.
 */
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/** A tensor of a safetensors file: its dtype as the file names it, shape and range in the data. */
struct StoredTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data (after the header)
  std::uint64_t numel() const;
};

/** A safetensors file whose header has been read and checked; tensors are read on demand. */
class SafetensorsFile {
 public:
  /** Opens and checks the header; throws std::runtime_error naming the file and what is wrong. */
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return path_; }
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  /** A tensor's values as float32 (F32 as is; F16 and BF16 widened exactly); throws naming the tensor when absent. */
  std::vector<float> floats(const std::string& name) const;

 private:
  std::string path_;
  std::uint64_t data_start_ = 0;
  std::map<std::string, StoredTensor> tensors_;
};

}  // namespace fsdp

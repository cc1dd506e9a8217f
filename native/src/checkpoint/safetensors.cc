#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/files.h"
#include "runtime/half.h"

namespace fsdp {

namespace {

// Hugging Face's own reader refuses headers over 100 MB; a GPT-2 XL header is about 40 KB.
constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr std::int64_t kMaxDim = 1ll << 40;

[[noreturn]] void io_failure(const std::string& path, const char* what) {
  const int err = errno;
  throw FileError(path + ": " + what + ": " + std::strerror(err), err);
}

void write_all(int fd, const std::string& path, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, 1 << 26));
    if (w < 0) {
      if (errno == EINTR) continue;
      io_failure(path, "write failed");
    }
    p += w, n -= static_cast<std::size_t>(w);
  }
}

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

}  // namespace

std::uint64_t StoredTensor::numel() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    std::uint64_t n = 1;
    for (std::int64_t d : t.shape) n *= static_cast<std::uint64_t>(d);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string text = header.dump();
  // The data starts 8-byte aligned, as Hugging Face's writer pads it (with spaces).
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  const std::uint64_t header_bytes = text.size();

  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = open_regular_for_writing(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  try {
    write_all(fd, tmp, &header_bytes, 8);
    write_all(fd, tmp, text.data(), text.size());
    for (const TensorToWrite& t : tensors) {
      std::uint64_t n = 1;
      for (std::int64_t d : t.shape) n *= static_cast<std::uint64_t>(d);
      write_all(fd, tmp, t.data, 4 * n);
    }
    if (::fsync(fd) != 0) io_failure(tmp, "fsync failed");
    if (::close(fd) != 0) {
      ::unlink(tmp.c_str());
      io_failure(tmp, "close failed");
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    io_failure(path, "rename failed");
  }
  sync_path(std::filesystem::path(path).parent_path().string());
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const ReadOnlyFile file(path, /*follow_links=*/false);
  const std::uint64_t size = file.size();
  if (size < 8)
    throw std::runtime_error(path + ": " + std::to_string(size) +
                             " bytes, too short for a safetensors file (its header size alone is 8)");
  std::uint64_t header_bytes = 0;
  file.read_at(0, &header_bytes, 8);
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - 8) {
    throw std::runtime_error(path + ": header of " + std::to_string(header_bytes) + " bytes in a file of " +
                             std::to_string(size) + " (not a safetensors file, or truncated)");
  }
  std::string text(header_bytes, '\0');
  file.read_at(8, text.data(), text.size());
  data_start_ = 8 + header_bytes;
  const std::uint64_t data_bytes = size - data_start_;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": the header is not JSON: " + e.what());
  }
  if (!header.is_object()) throw std::runtime_error(path + ": the header is not a JSON object");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor " + nlohmann::json(name).dump();
    if (!entry.is_object()) throw std::runtime_error(where + " is not an object");
    StoredTensor t;
    const auto& dtype = entry.contains("dtype") ? entry["dtype"] : nlohmann::json();
    if (!dtype.is_string()) throw std::runtime_error(where + ": dtype is missing or not a string");
    t.dtype = dtype.get<std::string>();
    const auto& shape = entry.contains("shape") ? entry["shape"] : nlohmann::json();
    if (!shape.is_array() || shape.size() > 8)
      throw std::runtime_error(where + ": shape is missing or not a list of at most 8 sizes");
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxDim)
        throw std::runtime_error(where + ": shape holds " + d.dump() + ", not a size");
      t.shape.push_back(d.get<std::int64_t>());
    }
    const auto& offsets = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw std::runtime_error(where + ": data_offsets is missing or not [begin, end]");
    }
    t.begin = offsets[0].get<std::uint64_t>();
    t.end = offsets[1].get<std::uint64_t>();
    if (t.begin > t.end || t.end > data_bytes) {
      throw std::runtime_error(where + ": bytes [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                               ") outside the file's " + std::to_string(data_bytes) + " bytes of data");
    }
    // Sizes are bounded (8 dims of at most 2^40 could still overflow): check in long double.
    long double elements = 1;
    for (std::int64_t d : t.shape) elements *= static_cast<long double>(d);
    const std::size_t width = dtype_bytes(t.dtype);
    if (width != 0 && elements * width != static_cast<long double>(t.end - t.begin)) {
      throw std::runtime_error(where + ": shape " + shape.dump() + " of " + t.dtype + " needs " +
                               std::to_string(static_cast<unsigned long long>(elements * width)) +
                               " bytes, data_offsets give " + std::to_string(t.end - t.begin));
    }
    if (t.end > t.begin) ranges.emplace_back(t.begin, t.end);
    tensors_.emplace(name, t);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second)
      throw std::runtime_error(path + ": two tensors share bytes from " + std::to_string(ranges[i].first) +
                               " of the data");
  }
}

std::vector<float> SafetensorsFile::floats(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::runtime_error(path_ + ": holds no tensor " + name);
  const StoredTensor& t = it->second;
  const std::size_t width = dtype_bytes(t.dtype);
  if (width == 0)
    throw std::runtime_error(path_ + ": tensor " + name + " is " + t.dtype + "; only F32, F16 and BF16 are read");
  const ReadOnlyFile file(path_, /*follow_links=*/false);
  if (file.size() < data_start_ + t.end)
    throw std::runtime_error(path_ + ": shorter than its header says (changed while reading?)");
  const std::uint64_t n = t.numel();
  std::vector<float> out(n);
  if (width == 4) {
    file.read_at(data_start_ + t.begin, out.data(), 4 * n);
    return out;
  }
  std::vector<std::uint16_t> half(n);
  file.read_at(data_start_ + t.begin, half.data(), 2 * n);
  for (std::uint64_t i = 0; i < n; ++i) out[i] = t.dtype == "BF16" ? bf16_to_float(half[i]) : f16_to_float(half[i]);
  return out;
}

}  // namespace fsdp

#include "runtime/allocator.h"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

namespace fsdp {

const char* category_name(MemoryCategory c) {
  static const char* const names[kMemoryCategories] = {"params",    "grads", "optimizer", "activations",
                                                       "workspace", "comm",  "other"};
  return names[static_cast<int>(c)];
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    category_ = other.category_;
    other.owner_ = nullptr;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (data_ && owner_) owner_->give_back(*this);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

AllocationError::AllocationError(MemoryCategory category, std::size_t bytes, const MemoryUsage& live) {
  auto size = [](std::uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, b >= (1ull << 30) ? "%.2f GiB" : "%.1f MiB",
                  b >= (1ull << 30) ? static_cast<double>(b) / (1ull << 30) : static_cast<double>(b) / (1ull << 20));
    return std::string(buf);
  };
  message_ = "out of memory: " + std::to_string(bytes) + " bytes (" + size(bytes) + ") for " + category_name(category) +
             " could not be allocated, with " + size(live.total) + " live (";
  for (int k = 0; k < kMemoryCategories; ++k)
    message_ +=
        (k ? ", " : "") + std::string(category_name(static_cast<MemoryCategory>(k))) + " " + size(live.bytes[k]);
  message_ += ")";
}

Allocator::~Allocator() = default;

Buffer Allocator::allocate(MemoryCategory category, std::size_t bytes) {
  Buffer b;
  if (bytes == 0) return b;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      p = it->second;
      cache_.erase(it);
    }
  }
  if (!p) {
    p = system_allocate(bytes);
    if (!p) throw AllocationError(category, bytes, live());
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int c = static_cast<int>(category);
  live_.bytes[c] += bytes;
  live_.total += bytes;
  if (live_.bytes[c] > peak_.bytes[c]) peak_.bytes[c] = live_.bytes[c];
  if (live_.total > peak_.total) peak_.total = live_.total;
  b.owner_ = this;
  b.data_ = p;
  b.bytes_ = bytes;
  b.category_ = category;
  return b;
}

void Allocator::give_back(Buffer& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const int c = static_cast<int>(b.category_);
  live_.bytes[c] -= b.bytes_;
  live_.total -= b.bytes_;
  cache_.emplace(b.bytes_, b.data_);
}

MemoryUsage Allocator::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

MemoryUsage Allocator::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = live_;
}

void Allocator::release_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : cache_) system_free(entry.second);
  cache_.clear();
}

void* HostAllocator::system_allocate(std::size_t bytes) {
  // 64 bytes: a cache line, and the widest vector loads the kernels use.
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded);
}

void HostAllocator::system_free(void* p) {
  std::free(p);
}

}  // namespace fsdp

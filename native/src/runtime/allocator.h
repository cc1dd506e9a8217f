// Every tensor buffer of the runtime is allocated here, tagged with what it holds. Live bytes and
// their peaks are counted per category, so each step can report its measured peak next to the
// memory plan (memory/memory_plan.h) — the ground truth the plan and the estimator are tested on.
//
// Freed buffers are cached by exact size and handed out again (as PyTorch's caching allocator
// does): a training step allocates the same shapes every time, so after the first step nothing
// touches the system allocator and pages are not faulted in again. The counters count what is
// live (handed out), not what the cache keeps, like torch.cuda.max_memory_allocated.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace fsdp {

enum class MemoryCategory : int { params, grads, optimizer, activations, workspace, comm, other };
inline constexpr int kMemoryCategories = 7;
const char* category_name(MemoryCategory c);

struct MemoryUsage {
  std::array<std::uint64_t, kMemoryCategories> bytes{};
  std::uint64_t total = 0;
  std::uint64_t operator[](MemoryCategory c) const { return bytes[static_cast<int>(c)]; }
};

class Allocator;

/**
 * An allocation the system refused: what it was for and how many bytes, with what was live then,
 * instead of a bare std::bad_alloc. Still a std::bad_alloc for those who catch that.
 */
class AllocationError : public std::bad_alloc {
 public:
  AllocationError(MemoryCategory category, std::size_t bytes, const MemoryUsage& live);
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/** Owner of one allocation; returns it to its allocator when destroyed. Move-only. */
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void reset();
  bool empty() const { return data_ == nullptr; }
  std::size_t bytes() const { return bytes_; }
  MemoryCategory category() const { return category_; }
  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  std::int32_t* i32() const { return static_cast<std::int32_t*>(data_); }

 private:
  friend class Allocator;
  Allocator* owner_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::other;
};

class Allocator {
 public:
  virtual ~Allocator();

  /** A buffer of `bytes` (64-byte aligned, contents undefined); zero bytes give an empty buffer. */
  Buffer allocate(MemoryCategory category, std::size_t bytes);

  MemoryUsage live() const;
  /** Highest live bytes per category, and highest live total, since the last reset_peak(). */
  MemoryUsage peak() const;
  /** Peaks restart from what is live now (called at the start of every step). */
  void reset_peak();
  /** Gives cached (free) blocks back to the system. */
  void release_cache();

 protected:
  virtual void* system_allocate(std::size_t bytes) = 0;
  virtual void system_free(void* p) = 0;

 private:
  friend class Buffer;
  void give_back(Buffer& b);

  mutable std::mutex mu_;  // the data loader's prefetch thread allocates too
  std::unordered_multimap<std::size_t, void*> cache_;
  MemoryUsage live_, peak_;
};

/** Host memory (the CPU backend's device memory, and pinned-free host memory for CPU offload). */
class HostAllocator final : public Allocator {
 public:
  ~HostAllocator() override { release_cache(); }

 protected:
  void* system_allocate(std::size_t bytes) override;
  void system_free(void* p) override;
};

}  // namespace fsdp

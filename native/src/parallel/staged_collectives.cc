#include "parallel/staged_collectives.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace fsdp {

// --- staging in plain host memory -----------------------------------------------------------------

void* MemcpyStaging::allocate_host(std::size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void MemcpyStaging::free_host(void* p) {
  std::free(p);
}

void MemcpyStaging::to_host(void* host, const void* device, std::size_t bytes) {
  std::memcpy(host, device, bytes);
  to_host_bytes += bytes;
}

void MemcpyStaging::to_device(void* device, const void* host, std::size_t bytes) {
  std::memcpy(device, host, bytes);
  to_device_bytes += bytes;
}

// --- the pool of host buffers ---------------------------------------------------------------------

/**
 * Pinned host memory is slow to allocate (a system call that pins pages): buffers are kept and
 * reused, the smallest free one that fits first. A prefetch holds two until it is waited for.
 */
struct StagedCollectives::Pool {
  std::shared_ptr<HostStaging> staging;
  std::vector<std::pair<void*, std::size_t>> free;

  explicit Pool(std::shared_ptr<HostStaging> s) : staging(std::move(s)) {}
  ~Pool() {
    for (auto& [p, n] : free) staging->free_host(p);
  }
  std::pair<void*, std::size_t> take(std::size_t bytes) {
    std::size_t best = free.size();
    for (std::size_t i = 0; i < free.size(); ++i)
      if (free[i].second >= bytes && (best == free.size() || free[i].second < free[best].second)) best = i;
    if (best < free.size()) {
      auto b = free[best];
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(best));
      return b;
    }
    return {staging->allocate_host(bytes), bytes};
  }
};

StagedCollectives::HostBuffer& StagedCollectives::HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) pool_->free.emplace_back(p_, bytes_);
    pool_ = std::move(o.pool_), p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr;
  }
  return *this;
}

StagedCollectives::HostBuffer::~HostBuffer() {
  if (p_) pool_->free.emplace_back(p_, bytes_);
}

StagedCollectives::HostBuffer StagedCollectives::buffer(std::size_t bytes) {
  auto [p, n] = pool_->take(bytes);
  return HostBuffer(pool_, p, n);
}

// --- the operations ------------------------------------------------------------------------------

StagedCollectives::StagedCollectives(Collectives& host, std::shared_ptr<HostStaging> staging)
    : host_(&host), staging_(std::move(staging)), pool_(std::make_shared<Pool>(staging_)) {}

StagedCollectives::StagedCollectives(std::unique_ptr<Collectives> host, std::shared_ptr<HostStaging> staging)
    : owned_(std::move(host)),
      host_(owned_.get()),
      staging_(std::move(staging)),
      pool_(std::make_shared<Pool>(staging_)) {}

StagedCollectives::~StagedCollectives() = default;

void StagedCollectives::all_reduce(void* data, std::size_t count, CommType type) {
  const std::size_t bytes = count * comm_type_bytes(type);
  HostBuffer h = buffer(bytes);
  staging_->to_host(h.data(), data, bytes);
  host_->all_reduce(h.data(), count, type);
  staging_->to_device(data, h.data(), bytes);
}

void StagedCollectives::reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) {
  const std::size_t bytes = count * comm_type_bytes(type);
  HostBuffer in = buffer(bytes * static_cast<std::size_t>(size())), out = buffer(bytes);
  staging_->to_host(in.data(), send, bytes * static_cast<std::size_t>(size()));
  host_->reduce_scatter(in.data(), out.data(), count, type);
  staging_->to_device(recv, out.data(), bytes);
}

void StagedCollectives::reduce_scatter_in_place(void* data, Blocks blocks, CommType type) {
  const std::size_t e = comm_type_bytes(type), at = blocks.offset(rank()) * e;
  HostBuffer h = buffer(blocks.total * e);
  staging_->to_host(h.data(), data, blocks.total * e);
  host_->reduce_scatter_in_place(h.data(), blocks, type);
  // Only the rank's block is defined afterwards: only it goes back.
  staging_->to_device(static_cast<char*>(data) + at, h.at(at), blocks.count(rank()) * e);
}

void StagedCollectives::all_gather(const void* send, void* recv, std::size_t count, CommType type) {
  const std::size_t bytes = count * comm_type_bytes(type), all = bytes * static_cast<std::size_t>(size());
  HostBuffer in = buffer(bytes), out = buffer(all);
  staging_->to_host(in.data(), send, bytes);
  host_->all_gather(in.data(), out.data(), count, type);
  staging_->to_device(recv, out.data(), all);
}

/** An all-gather in flight over host buffers; waiting copies the result to the device. */
class StagedPending final : public PendingCollective {
 public:
  StagedPending(std::unique_ptr<PendingCollective> op, StagedCollectives::HostBuffer in,
                StagedCollectives::HostBuffer out, void* recv, std::size_t bytes, std::shared_ptr<HostStaging> staging)
      : op_(std::move(op)),
        in_(std::move(in)),
        out_(std::move(out)),
        recv_(recv),
        bytes_(bytes),
        staging_(std::move(staging)) {}
  ~StagedPending() override {
    // A prefetch nobody used: finish the host operation (its buffers return to the pool), copy nothing.
    if (op_) op_->wait();
  }
  void wait() override {
    if (!op_) return;
    op_->wait();
    op_.reset();
    staging_->to_device(recv_, out_.data(), bytes_);
  }

 private:
  std::unique_ptr<PendingCollective> op_;
  StagedCollectives::HostBuffer in_, out_;
  void* recv_;
  std::size_t bytes_;
  std::shared_ptr<HostStaging> staging_;
};

std::unique_ptr<PendingCollective> StagedCollectives::start_all_gather(const void* send, void* recv, std::size_t count,
                                                                       CommType type) {
  const std::size_t bytes = count * comm_type_bytes(type), all = bytes * static_cast<std::size_t>(size());
  HostBuffer in = buffer(bytes), out = buffer(all);
  staging_->to_host(in.data(), send, bytes);
  auto op = host_->start_all_gather(in.data(), out.data(), count, type);
  return std::make_unique<StagedPending>(std::move(op), std::move(in), std::move(out), recv, all, staging_);
}

void StagedCollectives::all_gather_in_place(void* data, Blocks blocks, CommType type) {
  const std::size_t e = comm_type_bytes(type), at = blocks.offset(rank()) * e;
  HostBuffer h = buffer(blocks.total * e);
  staging_->to_host(h.at(at), static_cast<const char*>(data) + at, blocks.count(rank()) * e);
  host_->all_gather_in_place(h.data(), blocks, type);
  staging_->to_device(data, h.data(), blocks.total * e);
}

void StagedCollectives::broadcast(void* data, std::size_t bytes, int root) {
  HostBuffer h = buffer(bytes);
  if (rank() == root) staging_->to_host(h.data(), data, bytes);
  host_->broadcast(h.data(), bytes, root);
  if (rank() != root) staging_->to_device(data, h.data(), bytes);
}

std::unique_ptr<Collectives> StagedCollectives::split(int color, int key) {
  return std::make_unique<StagedCollectives>(host_->split(color, key), staging_);
}

}  // namespace fsdp

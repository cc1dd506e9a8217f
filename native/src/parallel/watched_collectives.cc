#include "parallel/watched_collectives.h"

#include "runtime/files.h"

namespace fsdp {

namespace {

/** An all-gather in flight: waiting for it is waiting in a collective too. */
class WatchedPending final : public PendingCollective {
 public:
  WatchedPending(std::unique_ptr<PendingCollective> inner, CollectiveClock& clock)
      : inner_(std::move(inner)), clock_(clock) {}
  ~WatchedPending() override {
    if (!inner_) return;
    CollectiveWait w(clock_);
    inner_.reset();
  }
  void wait() override {
    CollectiveWait w(clock_);
    inner_->wait();
  }

 private:
  std::unique_ptr<PendingCollective> inner_;
  CollectiveClock& clock_;
};

}  // namespace

CollectiveWait::CollectiveWait(CollectiveClock& clock) : clock_(clock) {
  clock_.entered.fetch_add(1);
  double none = 0.0;
  outer_ = clock_.waiting_since.compare_exchange_strong(none, unix_time());
}

CollectiveWait::~CollectiveWait() {
  if (outer_) clock_.waiting_since.store(0.0);
}

WatchedCollectives::WatchedCollectives(Collectives& inner, CollectiveClock& clock, std::unique_ptr<Collectives> owned)
    : owned_(std::move(owned)), inner_(inner), clock_(clock) {}

void WatchedCollectives::all_reduce(void* data, std::size_t count, CommType type) {
  CollectiveWait w(clock_);
  inner_.all_reduce(data, count, type);
}

void WatchedCollectives::reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) {
  CollectiveWait w(clock_);
  inner_.reduce_scatter(send, recv, count, type);
}

void WatchedCollectives::reduce_scatter_in_place(void* data, Blocks blocks, CommType type) {
  CollectiveWait w(clock_);
  inner_.reduce_scatter_in_place(data, blocks, type);
}

void WatchedCollectives::all_gather(const void* send, void* recv, std::size_t count, CommType type) {
  CollectiveWait w(clock_);
  inner_.all_gather(send, recv, count, type);
}

std::unique_ptr<PendingCollective> WatchedCollectives::start_all_gather(const void* send, void* recv, std::size_t count,
                                                                        CommType type) {
  CollectiveWait w(clock_);
  return std::make_unique<WatchedPending>(inner_.start_all_gather(send, recv, count, type), clock_);
}

void WatchedCollectives::all_gather_in_place(void* data, Blocks blocks, CommType type) {
  CollectiveWait w(clock_);
  inner_.all_gather_in_place(data, blocks, type);
}

void WatchedCollectives::broadcast(void* data, std::size_t bytes, int root) {
  CollectiveWait w(clock_);
  inner_.broadcast(data, bytes, root);
}

void WatchedCollectives::barrier() {
  CollectiveWait w(clock_);
  inner_.barrier();
}

std::unique_ptr<Collectives> WatchedCollectives::split(int color, int key) {
  CollectiveWait w(clock_);
  std::unique_ptr<Collectives> part = inner_.split(color, key);
  Collectives& ref = *part;
  return std::make_unique<WatchedCollectives>(ref, clock_, std::move(part));
}

}  // namespace fsdp

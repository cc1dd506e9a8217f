// Collectives that say where this rank is: how many collectives it has entered, and since when it
// waits in the one it is in. Every operation of the control world and of the device collectives
// goes through one (the trainer wraps both), so a watchdog (train/collective_watchdog.h) can see a
// collective that never completes — a rank frozen, stopped or stuck elsewhere — and end the job
// naming that rank, instead of the others spinning in MPI forever.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "parallel/collectives.h"

namespace fsdp {

struct CollectiveClock {
  std::atomic<std::uint64_t> entered{0};   // collectives entered so far
  std::atomic<double> waiting_since{0.0};  // unix time this rank entered the one it waits in; 0: in none
};

class WatchedCollectives final : public Collectives {
 public:
  /** Passes every operation to `inner`, timing it on `clock`; `owned` (optional) is inner, kept alive here. */
  WatchedCollectives(Collectives& inner, CollectiveClock& clock, std::unique_ptr<Collectives> owned = nullptr);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce(void* data, std::size_t count, CommType type) override;
  void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) override;
  void reduce_scatter_in_place(void* data, Blocks blocks, CommType type) override;
  void all_gather(const void* send, void* recv, std::size_t count, CommType type) override;
  std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                      CommType type) override;
  void all_gather_in_place(void* data, Blocks blocks, CommType type) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Collectives> split(int color, int key) override;

 private:
  std::unique_ptr<Collectives> owned_;
  Collectives& inner_;
  CollectiveClock& clock_;
};

/** Marks the clock for the lifetime of one blocking call (nested calls keep the outer start). */
class CollectiveWait {
 public:
  explicit CollectiveWait(CollectiveClock& clock);
  ~CollectiveWait();
  CollectiveWait(const CollectiveWait&) = delete;
  CollectiveWait& operator=(const CollectiveWait&) = delete;

 private:
  CollectiveClock& clock_;
  bool outer_;
};

}  // namespace fsdp

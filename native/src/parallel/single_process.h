// Collectives of a world of one: every operation is the identity (or a copy).
#pragma once
#include <cstring>

#include "parallel/collectives.h"

namespace fsdp {

class SingleProcess final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce(void*, std::size_t, CommType) override {}
  void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) override {
    copy(send, recv, count, type);
  }
  void reduce_scatter_in_place(void*, Blocks, CommType) override {}
  void all_gather(const void* send, void* recv, std::size_t count, CommType type) override {
    copy(send, recv, count, type);
  }
  std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                      CommType type) override;
  void all_gather_in_place(void*, Blocks, CommType) override {}
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  std::unique_ptr<Collectives> split(int, int) override { return std::make_unique<SingleProcess>(); }

 private:
  static void copy(const void* send, void* recv, std::size_t count, CommType type) {
    if (send != recv) std::memcpy(recv, send, count * comm_type_bytes(type));
  }
};

}  // namespace fsdp

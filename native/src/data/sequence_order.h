// The order sequences are read in: a seeded pseudo-random permutation of [0, n) that changes
// every epoch, computed per index (a Feistel network with cycle walking) instead of stored, so it
// costs no memory and any position can be reached directly — after a resume, a rollback or a skip.
#pragma once
#include <cstdint>

namespace fsdp {

class SequenceOrder {
 public:
  /** shuffle false: the identity. */
  SequenceOrder(std::uint64_t n, bool shuffle, std::uint64_t seed, std::uint64_t epoch);
  std::uint64_t operator[](std::uint64_t i) const;

 private:
  std::uint64_t feistel(std::uint64_t x) const;
  std::uint64_t n_;
  bool shuffle_;
  std::uint64_t key_;
  int half_bits_ = 1;
  std::uint64_t half_mask_ = 1;
};

}  // namespace fsdp

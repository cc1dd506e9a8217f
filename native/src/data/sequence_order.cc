#include "data/sequence_order.h"

#include "runtime/rng.h"

namespace fsdp {

SequenceOrder::SequenceOrder(std::uint64_t n, bool shuffle, std::uint64_t seed, std::uint64_t epoch)
    : n_(n), shuffle_(shuffle), key_(derive_key(derive_key(seed, 0x5eedda7aULL), epoch)) {
  // The smallest even-width domain 2^(2h) >= n: cycle walking then takes fewer than 4 rounds on average.
  while ((std::uint64_t{1} << (2 * half_bits_)) < n_) ++half_bits_;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
}

std::uint64_t SequenceOrder::feistel(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (std::uint64_t round = 0; round < 4; ++round) {
    const std::uint64_t next = left ^ (derive_key(key_ ^ round, right) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t SequenceOrder::operator[](std::uint64_t i) const {
  if (!shuffle_) return i;
  // A bijection of the domain, walked until it lands inside [0, n): still a bijection of [0, n).
  std::uint64_t x = feistel(i);
  while (x >= n_) x = feistel(x);
  return x;
}

}  // namespace fsdp

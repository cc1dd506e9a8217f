#include "data/batch_stream.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "data/sequence_order.h"

namespace fsdp {

namespace {

std::uint64_t sequence_count(const TokenFile& f, long T) {
  return f.size() > 0 ? (f.size() - 1) / static_cast<std::uint64_t>(T) : 0;
}

}  // namespace

BatchStream::BatchStream(Allocator& alloc, std::shared_ptr<const TokenFile> file, long B, long T, bool shuffle,
                         std::uint64_t seed, int prefetch, int rank, int ranks)
    : file_(std::move(file)),
      B_(B),
      T_(T),
      shuffle_(shuffle),
      seed_(seed),
      slots_(prefetch + 1),
      rank_(rank),
      ranks_(ranks) {
  sequences_ = sequence_count(*file_, T);
  const std::uint64_t global = static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(ranks);
  batches_per_epoch_ = sequences_ / global;
  if (batches_per_epoch_ == 0) {
    throw std::runtime_error(file_->path() + ": " + std::to_string(file_->size()) + " tokens make " +
                             std::to_string(sequences_) + " sequences of " + std::to_string(T) +
                             ", fewer than one batch of " + std::to_string(global) +
                             (ranks > 1 ? " (" + std::to_string(ranks) + " ranks x " + std::to_string(B) + ")" : ""));
  }
  // One buffer per slot holding inputs then targets: (prefetch + 1) x 8 B T bytes, as planned.
  for (int s = 0; s < slots_; ++s) {
    ring_.push_back(alloc.allocate(MemoryCategory::other, 8 * static_cast<std::size_t>(B * T)));
  }
  start_thread();
}

BatchStream::~BatchStream() {
  stop_thread();
}

void BatchStream::read(const TokenFile& file, long B, long T, bool shuffle, std::uint64_t seed, std::uint64_t position,
                       std::int32_t* inputs, std::int32_t* targets, int rank, int ranks) {
  const std::uint64_t n = sequence_count(file, T);
  const std::uint64_t global = static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(ranks);
  const std::uint64_t per_epoch = n / global;
  if (per_epoch == 0)
    throw std::runtime_error(file.path() + ": fewer sequences (" + std::to_string(n) + ") than one batch of " +
                             std::to_string(global));
  // The epoch comes from the position: each rank reshuffles at the same batch, by construction.
  const std::uint64_t epoch = position / per_epoch;
  const std::uint64_t first =
      (position % per_epoch) * global + static_cast<std::uint64_t>(rank) * static_cast<std::uint64_t>(B);
  const SequenceOrder order(n, shuffle, seed, epoch);
  // Every id indexes the embedding table and the logits: TokenFile::read checks them as it reads,
  // where every batch of either backend is built (and that the file is still the one opened).
  std::vector<std::uint32_t> seq(static_cast<std::size_t>(T) + 1);
  for (long b = 0; b < B; ++b) {
    const std::uint64_t start = order[first + static_cast<std::uint64_t>(b)] * static_cast<std::uint64_t>(T);
    file.read(start, static_cast<std::uint64_t>(T) + 1, seq.data());
    for (long t = 0; t < T; ++t) {
      // Below id_limit() (checked by read), itself below model.vocab_size, which the schema keeps under 2^31.
      inputs[b * T + t] = static_cast<std::int32_t>(seq[t]);
      targets[b * T + t] = static_cast<std::int32_t>(seq[t + 1]);
    }
  }
}

void BatchStream::fill(std::uint64_t position, int slot) {
  std::int32_t* in = ring_[slot].i32();
  read(*file_, B_, T_, shuffle_, seed_, position, in, in + B_ * T_, rank_, ranks_);
}

Batch BatchStream::next() {
  const std::uint64_t p = position_;
  const int slot = static_cast<int>(p % static_cast<std::uint64_t>(slots_));
  if (slots_ == 1) {
    fill(p, 0);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return filled_ > p || failure_; });
    // The producer failed on a batch this consumer has not reached yet: report it now.
    if (filled_ <= p) std::rethrow_exception(failure_);
  }
  {
    // The consumer now holds this slot; the batch before it is free for the producer.
    std::lock_guard<std::mutex> lock(mu_);
    position_ = p + 1;
  }
  cv_.notify_all();
  std::int32_t* in = ring_[slot].i32();
  return {in, in + B_ * T_, B_, T_};
}

void BatchStream::produce() {
  for (;;) {
    std::uint64_t p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Slots hold batches [position_ - 1, position_ - 1 + slots_): the one in use and those ahead.
      cv_.wait(lock, [&] { return stop_ || filled_ + 1 < position_ + static_cast<std::uint64_t>(slots_); });
      if (stop_) return;
      p = filled_;
    }
    try {
      fill(p, static_cast<int>(p % static_cast<std::uint64_t>(slots_)));
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        failure_ = std::current_exception();
      }
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (filled_ == p) filled_ = p + 1;
    }
    cv_.notify_all();
  }
}

void BatchStream::start_thread() {
  if (slots_ == 1) return;
  stop_ = false;
  failure_ = nullptr;
  filled_ = position_;
  thread_ = std::thread([this] { produce(); });
}

void BatchStream::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchStream::seek(std::uint64_t position) {
  stop_thread();
  position_ = position;
  start_thread();
}

}  // namespace fsdp

// The training data as a stream of micro-batches. Sequence j of a token file is tokens
// [jT, jT + T] (inputs are the first T, targets the last T); each epoch visits the sequences in a
// new seeded order (data/sequence_order.h) in batches of B, and drops the n mod B left over
// (a different few each epoch), so every micro-batch is full and the mean loss over micro-steps
// is the mean over tokens. A micro-batch is a pure function of its position in the stream — the
// one integer a checkpoint stores.
//
// With several ranks the stream is a distributed sampler: micro-batch p of the run is a global
// batch of ranks x B sequences, and rank r reads the r-th B of them. Every rank follows the same
// seeded order, each epoch's order is a function of the position alone (no set_epoch to forget),
// and the run sees the sequences one process with a batch of ranks x B would.
//
// A background thread fills a ring of prefetch_batches + 1 batch buffers (MEMORY.md "other")
// ahead of the step that consumes them; with prefetch_batches 0 batches are read on demand.
#pragma once
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/token_file.h"
#include "model/model.h"
#include "runtime/allocator.h"

namespace fsdp {

class BatchStream {
 public:
  /** rank, ranks: this rank's part of every global batch (the distributed sampler). */
  BatchStream(Allocator& alloc, std::shared_ptr<const TokenFile> file, long B, long T, bool shuffle, std::uint64_t seed,
              int prefetch, int rank = 0, int ranks = 1);
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  /** The micro-batch at position(), valid until the next call; advances the position. Throws what reading it threw (a
   * bad token id, naming the file). */
  Batch next();
  /** Micro-batches consumed so far. */
  std::uint64_t position() const { return position_; }
  /** Continue from `position` (resume, rollback, skipping a batch). */
  void seek(std::uint64_t position);

  std::uint64_t sequences() const { return sequences_; }
  std::uint64_t batches_per_epoch() const { return batches_per_epoch_; }

  /**
   * Writes rank's part of micro-batch `position` of a stream into inputs/targets (B*T each); throws
   * naming the file on an id not below file.id_limit(), or when the file changed since it was opened.
   */
  static void read(const TokenFile& file, long B, long T, bool shuffle, std::uint64_t seed, std::uint64_t position,
                   std::int32_t* inputs, std::int32_t* targets, int rank = 0, int ranks = 1);

 private:
  void produce();
  void start_thread();
  void stop_thread();
  void fill(std::uint64_t position, int slot);

  std::shared_ptr<const TokenFile> file_;
  long B_, T_;
  bool shuffle_;
  std::uint64_t seed_;
  int slots_;
  int rank_, ranks_;
  std::uint64_t sequences_ = 0, batches_per_epoch_ = 0;
  std::vector<Buffer> ring_;  // per slot: inputs[B*T] then targets[B*T], int32

  std::uint64_t position_ = 0;  // next batch the consumer takes
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t filled_ = 0;  // batches [position_, filled_) are ready in their slots
  bool stop_ = false;
  std::exception_ptr failure_;  // what the producer threw; it stops producing
  std::thread thread_;
};

}  // namespace fsdp

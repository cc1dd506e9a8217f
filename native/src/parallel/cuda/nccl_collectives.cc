// NcclCollectives (nccl_collectives.h): the one file of the runtime that needs NCCL's headers.
#include "parallel/cuda/nccl_collectives.h"

#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace fsdp::cuda {

namespace {

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + cudaGetErrorString(e));
}

ncclDataType_t nccl_type(CommType t) {
  switch (t) {
    case CommType::f32:
      return ncclFloat32;
    case CommType::f64:
      return ncclFloat64;
    case CommType::u8:
      return ncclUint8;
    case CommType::bf16:
      return ncclBfloat16;
    case CommType::f16:
      return ncclFloat16;
  }
  return ncclUint8;
}

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // a plain host pointer is not an error worth keeping
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

char* bytes(void* p, std::size_t elements, CommType t) {
  return static_cast<char*>(p) + elements * comm_type_bytes(t);
}

}  // namespace

bool nccl_built() {
  return true;
}

struct NcclCollectives::State {
  std::unique_ptr<Collectives> owned_bootstrap;
  Collectives* bootstrap = nullptr;
  cudaStream_t compute = nullptr, comm_stream = nullptr;
  cudaEvent_t compute_done = nullptr;
  ncclComm_t comm = nullptr;
  void* staging = nullptr;  // device bytes for uneven blocks (async copies on comm_stream may still read it)
  std::size_t staging_bytes = 0;
  // Host scalars' own buffers, device and pinned host: never shared with `staging`, and idle
  // whenever all_reduce is not running (it waits for its copies before it returns).
  void* scalars = nullptr;
  void* scalars_host = nullptr;
  std::size_t scalar_bytes = 0;
  int rank = 0, size = 1;

  /** The comm stream waits for the compute stream's queued work. */
  void begin() {
    check(cudaEventRecord(compute_done, compute), "event record");
    check(cudaStreamWaitEvent(comm_stream, compute_done, 0), "stream wait");
  }
  /** An event after the collective, which the compute stream then waits for. */
  cudaEvent_t end_event() {
    cudaEvent_t done = nullptr;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "event");
    check(cudaEventRecord(done, comm_stream), "event record");
    return done;
  }
  void end() {
    cudaEvent_t done = end_event();
    check(cudaStreamWaitEvent(compute, done, 0), "stream wait");
    cudaEventDestroy(done);
  }
  void* stage(std::size_t n) {
    if (n > staging_bytes) {
      if (staging) cudaFree(staging);
      check(cudaMalloc(&staging, n), "staging buffer");
      staging_bytes = n;
    }
    return staging;
  }
  void scalar_buffers(std::size_t n) {
    if (n <= scalar_bytes) return;
    if (scalars) cudaFree(scalars);
    if (scalars_host) cudaFreeHost(scalars_host);
    scalars = scalars_host = nullptr;
    scalar_bytes = 0;
    check(cudaMalloc(&scalars, n), "scalar buffer");
    check(cudaMallocHost(&scalars_host, n), "pinned scalar buffer");
    scalar_bytes = n;
  }
};

/** An all-gather in flight: wait() orders the compute stream after it. */
class PendingNccl final : public PendingCollective {
 public:
  PendingNccl(cudaEvent_t done, cudaStream_t compute) : done_(done), compute_(compute) {}
  ~PendingNccl() override { wait(); }
  void wait() override {
    if (!done_) return;
    cudaStreamWaitEvent(compute_, done_, 0);
    cudaEventDestroy(done_);
    done_ = nullptr;
  }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
};

NcclCollectives::NcclCollectives(Collectives& bootstrap, cudaStream_t compute) : s_(std::make_unique<State>()) {
  s_->bootstrap = &bootstrap;
  s_->rank = bootstrap.rank();
  s_->size = bootstrap.size();
  s_->compute = compute;
  check(cudaStreamCreateWithFlags(&s_->comm_stream, cudaStreamNonBlocking), "stream");
  check(cudaEventCreateWithFlags(&s_->compute_done, cudaEventDisableTiming), "event");
  ncclUniqueId id{};
  if (s_->rank == 0) check(ncclGetUniqueId(&id), "unique id");
  bootstrap.broadcast(&id, sizeof id, 0);
  check(ncclCommInitRank(&s_->comm, s_->size, id, s_->rank), "communicator");
}

NcclCollectives::NcclCollectives(std::unique_ptr<Collectives> bootstrap, cudaStream_t compute)
    : NcclCollectives(*bootstrap, compute) {
  s_->owned_bootstrap = std::move(bootstrap);
}

NcclCollectives::~NcclCollectives() {
  if (s_->comm_stream) cudaStreamSynchronize(s_->comm_stream);
  if (s_->comm) ncclCommDestroy(s_->comm);
  if (s_->staging) cudaFree(s_->staging);
  if (s_->scalars) cudaFree(s_->scalars);
  if (s_->scalars_host) cudaFreeHost(s_->scalars_host);
  if (s_->compute_done) cudaEventDestroy(s_->compute_done);
  if (s_->comm_stream) cudaStreamDestroy(s_->comm_stream);
}

int NcclCollectives::rank() const {
  return s_->rank;
}
int NcclCollectives::size() const {
  return s_->size;
}

void NcclCollectives::all_reduce(void* data, std::size_t count, CommType type) {
  const std::size_t n = count * comm_type_bytes(type);
  if (on_device(data)) {
    s_->begin();
    check(ncclAllReduce(data, data, count, nccl_type(type), ncclSum, s_->comm, s_->comm_stream), "all_reduce");
    s_->end();
    return;
  }
  // Host scalars (the gradient norm, agreed counts): through buffers of their own, every copy on
  // the communication stream (it is non-blocking: a plain cudaMemcpy runs on the legacy stream,
  // unordered with it, and `staging` may still be read there by an uneven gather's copies), and the
  // host reads only after the stream has finished them. Blocking, as the caller expects.
  s_->scalar_buffers(n);
  std::memcpy(s_->scalars_host, data, n);
  s_->begin();
  check(cudaMemcpyAsync(s_->scalars, s_->scalars_host, n, cudaMemcpyHostToDevice, s_->comm_stream), "copy to device");
  check(ncclAllReduce(s_->scalars, s_->scalars, count, nccl_type(type), ncclSum, s_->comm, s_->comm_stream),
        "all_reduce");
  check(cudaMemcpyAsync(s_->scalars_host, s_->scalars, n, cudaMemcpyDeviceToHost, s_->comm_stream), "copy to host");
  check(cudaStreamSynchronize(s_->comm_stream), "synchronize");
  std::memcpy(data, s_->scalars_host, n);
}

void NcclCollectives::reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) {
  s_->begin();
  check(ncclReduceScatter(send, recv, count, nccl_type(type), ncclSum, s_->comm, s_->comm_stream), "reduce_scatter");
  s_->end();
}

void NcclCollectives::reduce_scatter_in_place(void* data, Blocks blocks, CommType type) {
  if (blocks.total == blocks.block * static_cast<std::size_t>(s_->size)) {
    // Even blocks: NCCL's in-place form (the result lands in the rank's own block).
    s_->begin();
    check(ncclReduceScatter(data, bytes(data, blocks.offset(s_->rank), type), blocks.block, nccl_type(type), ncclSum,
                            s_->comm, s_->comm_stream),
          "reduce_scatter");
    s_->end();
    return;
  }
  // Uneven last blocks: the whole buffer reduced (the contract leaves the other blocks undefined).
  all_reduce(data, blocks.total, type);
}

void NcclCollectives::all_gather(const void* send, void* recv, std::size_t count, CommType type) {
  s_->begin();
  check(ncclAllGather(send, recv, count, nccl_type(type), s_->comm, s_->comm_stream), "all_gather");
  s_->end();
}

std::unique_ptr<PendingCollective> NcclCollectives::start_all_gather(const void* send, void* recv, std::size_t count,
                                                                     CommType type) {
  s_->begin();
  check(ncclAllGather(send, recv, count, nccl_type(type), s_->comm, s_->comm_stream), "all_gather");
  return std::make_unique<PendingNccl>(s_->end_event(), s_->compute);
}

void NcclCollectives::all_gather_in_place(void* data, Blocks blocks, CommType type) {
  const std::size_t elem = comm_type_bytes(type), padded = blocks.block * static_cast<std::size_t>(s_->size);
  s_->begin();
  if (blocks.total == padded) {
    check(ncclAllGather(bytes(data, blocks.offset(s_->rank), type), data, blocks.block, nccl_type(type), s_->comm,
                        s_->comm_stream),
          "all_gather");
  } else {
    // Uneven last blocks: gather whole blocks in a padded buffer, then copy the real elements back.
    void* staged = s_->stage(padded * elem);
    check(cudaMemcpyAsync(bytes(staged, blocks.block * s_->rank, type), bytes(data, blocks.offset(s_->rank), type),
                          blocks.count(s_->rank) * elem, cudaMemcpyDeviceToDevice, s_->comm_stream),
          "copy");
    check(ncclAllGather(bytes(staged, blocks.block * s_->rank, type), staged, blocks.block, nccl_type(type), s_->comm,
                        s_->comm_stream),
          "all_gather");
    check(cudaMemcpyAsync(data, staged, blocks.total * elem, cudaMemcpyDeviceToDevice, s_->comm_stream), "copy");
  }
  s_->end();
}

void NcclCollectives::broadcast(void* data, std::size_t n, int root) {
  // Host data (ids, configs, agreed values) goes through the bootstrap; device data through NCCL.
  if (!on_device(data)) return s_->bootstrap->broadcast(data, n, root);
  s_->begin();
  check(ncclBroadcast(data, data, n, ncclUint8, root, s_->comm, s_->comm_stream), "broadcast");
  s_->end();
}

void NcclCollectives::barrier() {
  check(cudaStreamSynchronize(s_->compute), "synchronize");
  s_->bootstrap->barrier();
}

std::unique_ptr<Collectives> NcclCollectives::split(int color, int key) {
  return std::make_unique<NcclCollectives>(s_->bootstrap->split(color, key), s_->compute);
}

}  // namespace fsdp::cuda

#include "parallel/mpi/mpi_collectives.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/half.h"

namespace fsdp {

namespace {

/**
 * MPI has no 16-bit float types: bfloat16 and float16 travel as MPI_UINT16_T (bit patterns), and
 * their sums use operations of our own that add in float32 and round once per addition to nearest
 * even, as a GPU's 16-bit addition does.
 */
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void sum_16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FromFloat(ToFloat(a[i]) + ToFloat(b[i]));
}

MPI_Op sum_op(CommType t) {
  static MPI_Op bf16 = MPI_OP_NULL, f16 = MPI_OP_NULL;
  if (t == CommType::bf16) {
    if (bf16 == MPI_OP_NULL) MPI_Op_create(&sum_16<bf16_to_float, float_to_bf16>, 1, &bf16);
    return bf16;
  }
  if (t == CommType::f16) {
    if (f16 == MPI_OP_NULL) MPI_Op_create(&sum_16<f16_to_float, float_to_f16>, 1, &f16);
    return f16;
  }
  return MPI_SUM;
}

MPI_Datatype mpi_type(CommType t) {
  switch (t) {
    case CommType::f32:
      return MPI_FLOAT;
    case CommType::f64:
      return MPI_DOUBLE;
    case CommType::u8:
      return MPI_BYTE;
    case CommType::bf16:
    case CommType::f16:
      return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

/** Communicators are set to return errors (not abort), so a failure becomes an exception naming the call. */
void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

/** MPI counts are int: a larger buffer must be split by the caller (a unit of over 2^31 elements per rank). */
int mpi_count(std::size_t n, const char* call) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(std::string(call) + ": " + std::to_string(n) + " elements exceed MPI's int counts");
  return static_cast<int>(n);
}

class MpiPending final : public PendingCollective {
 public:
  explicit MpiPending(MPI_Request r) : request_(r) {}
  ~MpiPending() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }

 private:
  MPI_Request request_;
};

class MpiCollectives final : public Collectives {
 public:
  /** Takes ownership of comm unless it is MPI_COMM_WORLD. */
  explicit MpiCollectives(MPI_Comm comm) : comm_(comm) {
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCollectives() override {
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(void* data, std::size_t count, CommType type) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(count, "MPI_Allreduce"), mpi_type(type), sum_op(type), comm_),
          "MPI_Allreduce");
  }

  void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) override {
    check(MPI_Reduce_scatter_block(send, recv, mpi_count(count, "MPI_Reduce_scatter_block"), mpi_type(type),
                                   sum_op(type), comm_),
          "MPI_Reduce_scatter_block");
  }

  void reduce_scatter_in_place(void* data, Blocks blocks, CommType type) override {
    std::vector<int> counts(size_);
    for (int r = 0; r < size_; ++r) counts[r] = mpi_count(blocks.count(r), "MPI_Reduce_scatter");
    check(MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(), mpi_type(type), sum_op(type), comm_),
          "MPI_Reduce_scatter");
    // In place, MPI leaves the rank's result at the start of the buffer; it belongs at the block's place.
    const std::size_t bytes = comm_type_bytes(type);
    std::memmove(static_cast<char*>(data) + blocks.offset(rank_) * bytes, data, blocks.count(rank_) * bytes);
  }

  void all_gather(const void* send, void* recv, std::size_t count, CommType type) override {
    const int n = mpi_count(count, "MPI_Allgather");
    check(MPI_Allgather(send, n, mpi_type(type), recv, n, mpi_type(type), comm_), "MPI_Allgather");
  }

  std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                      CommType type) override {
    const int n = mpi_count(count, "MPI_Iallgather");
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgather(send, n, mpi_type(type), recv, n, mpi_type(type), comm_, &request), "MPI_Iallgather");
    return std::make_unique<MpiPending>(request);
  }

  void all_gather_in_place(void* data, Blocks blocks, CommType type) override {
    std::vector<int> counts(size_), displs(size_);
    for (int r = 0; r < size_; ++r) {
      counts[r] = mpi_count(blocks.count(r), "MPI_Allgatherv");
      displs[r] = mpi_count(blocks.offset(r), "MPI_Allgatherv");
    }
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), displs.data(), mpi_type(type), comm_),
          "MPI_Allgatherv");
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    check(MPI_Bcast(data, mpi_count(bytes, "MPI_Bcast"), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  std::unique_ptr<Collectives> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiCollectives>(sub);
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool launched_by_mpi() {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix, prterun), PMI-1/2 launchers (srun, hydra).
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; OpenMP, OpenBLAS and the data loader's thread do not.
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; were it to, mpirun still sees this rank fail
}

std::unique_ptr<Collectives> MpiSession::world() {
  return std::make_unique<MpiCollectives>(MPI_COMM_WORLD);
}

}  // namespace fsdp

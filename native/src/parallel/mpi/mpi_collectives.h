// Collectives over MPI on CPU buffers (OpenMPI from Debian). Processes are started by mpirun or
// srun, never by the runtime itself; MpiSession joins the job they make. This is the only code that
// includes mpi.h, and it is compiled only where CMake finds MPI (the addon never links it).
#pragma once
#include <memory>

#include "parallel/collectives.h"

namespace fsdp {

/** True when this process was started by an MPI launcher (mpirun, or srun with PMI/PMIx). */
bool launched_by_mpi();

/** MPI_Init on construction (main thread only calls MPI), MPI_Finalize on destruction. */
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /** Every process of the job (MPI_COMM_WORLD). */
  std::unique_ptr<Collectives> world();

  /** Ends every process of the job now (MPI_Abort), this one with `code`: a rank that failed alone. */
  [[noreturn]] void abort_job(int code);
};

}  // namespace fsdp

// The backend a run config asks for: launch.device, the compute dtype of mixed_precision, the
// TF32 switch, and which GPU this rank drives.
#pragma once
#include "backend/backend.h"
#include "config/run_config.h"

namespace fsdp {

DType to_dtype(Dtype d);

/** This rank's place among its host's processes (mpirun's OMPI_COMM_WORLD_LOCAL_RANK, srun's SLURM_LOCALID, torchrun's
 * LOCAL_RANK); 0 alone. */
int local_rank();

/**
 * mixed_precision.param_dtype is the compute dtype (as FSDP's MixedPrecision: the dtype the
 * gathered parameters, and so the activations, have). The GPU is the rank's local rank among the
 * node's processes (mpirun's OMPI_COMM_WORLD_LOCAL_RANK, srun's SLURM_LOCALID), 0 alone.
 */
BackendOptions backend_options(const RunConfig& config);

}  // namespace fsdp

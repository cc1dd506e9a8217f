#include "backend/backend_options.h"

#include <cstdlib>
#include <string>

namespace fsdp {

DType to_dtype(Dtype d) {
  switch (d) {
    case Dtype::float32:
      return DType::f32;
    case Dtype::bfloat16:
      return DType::bf16;
    case Dtype::float16:
      return DType::f16;
  }
  return DType::f32;
}

int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

BackendOptions backend_options(const RunConfig& config) {
  BackendOptions o;
  o.compute = to_dtype(config.mixed_precision.param_dtype);
  o.tf32 = config.launch.tf32;
  o.device_index = local_rank();
  return o;
}

}  // namespace fsdp

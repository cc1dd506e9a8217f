#include "runtime/process_start.h"

#include <unistd.h>

#include <cstdlib>

#include "runtime/blas_kernels.h"

namespace fsdp {

void prepare_process_environment(char** argv) {
  bool again = false;
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    again = true;
  }
  if (put_blas_choice_in_environment()) again = true;
  // A second start checks again and finds everything set (or the library's refusal noted).
  if (again) execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

}  // namespace fsdp

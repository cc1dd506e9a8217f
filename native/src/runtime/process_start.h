// What must be in a process's environment before its libraries initialise, set from inside: the
// program checks its environment first thing in main() and, when something is missing, sets it
// and runs itself again (execv of /proc/self/exe with the same arguments), once.
//  - OMP_WAIT_POLICY=passive: OpenMP threads that spin while waiting take the cores OpenBLAS and
//    the other kernels need, and on a small shared machine that costs several times the step
//    time. libgomp reads it only when it loads. Set it (e.g. to active) to choose otherwise.
//  - OPENBLAS_CORETYPE: the runtime's choice of OpenBLAS kernels for this CPU
//    (runtime/blas_kernels.h). OpenBLAS reads it only when it loads. Set it to choose otherwise.
#pragma once

namespace fsdp {

/** Call first in main(): returns only when the environment is as it should be (or exec failed). */
void prepare_process_environment(char** argv);

}  // namespace fsdp

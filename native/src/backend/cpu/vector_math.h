// Vector expf and tanhf from glibc's libmvec. glibc declares them SIMD-callable only under
// -ffast-math, which would also let the compiler assume there are no NaNs — and this runtime
// must see NaNs to report them. Declaring the SIMD variants here lets `#pragma omp simd` loops
// call libmvec's AVX2/SSE versions while the rest of the arithmetic keeps IEEE semantics.
#pragma once
#include <cmath>

extern "C" {
__attribute__((simd("notinbranch"))) float expf(float);
__attribute__((simd("notinbranch"))) float tanhf(float);
}

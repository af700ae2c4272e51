// z[i] = a * x[i] + y[i] over bfloat16 memory, f64 arithmetic, grid-stride loop: the same contract as the
// WarpForth kernel. Each bfloat16 widens to double exactly; the multiply and the add are separate
// roundings (compiled with -fmad=false); __double2bfloat16 rounds the double result to bfloat16 once, to
// nearest even, straight from double (no intermediate float rounding), as WarpForth's BF! does.
#include <cuda_bf16.h>

extern "C" __global__ void axpy_bf16(double a, const __nv_bfloat16* __restrict__ x,
                                     const __nv_bfloat16* __restrict__ y, __nv_bfloat16* __restrict__ z,
                                     long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double xi = (double)__bfloat162float(x[i]);
        const double yi = (double)__bfloat162float(y[i]);
        z[i] = __double2bfloat16(a * xi + yi);
    }
}

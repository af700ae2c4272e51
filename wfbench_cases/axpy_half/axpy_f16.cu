// z[i] = a * x[i] + y[i] over float16 memory, f64 arithmetic, grid-stride loop: the same contract as the
// WarpForth kernel. Each half widens to double exactly; the multiply and the add are separate roundings
// (compiled with -fmad=false); __double2half rounds the double result to half once, to nearest even
// (cvt.rn.f16.f64, the instruction WarpForth's HF! emits).
#include <cuda_fp16.h>

extern "C" __global__ void axpy_f16(double a, const __half* __restrict__ x, const __half* __restrict__ y,
                                    __half* __restrict__ z, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double xi = (double)__half2float(x[i]);
        const double yi = (double)__half2float(y[i]);
        z[i] = __double2half(a * xi + yi);
    }
}

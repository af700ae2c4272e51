// Correct CUDA twin: z[i] = a * x[i] + y[i] over float64 (built with -fmad=false), grid-stride loop.
extern "C" __global__ void @KERNEL@(double a, const double* __restrict__ x, const double* __restrict__ y,
                                    double* __restrict__ z, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        z[i] = a * x[i] + y[i];
    }
}

// Correct CUDA twin: y[i] = k * x[i] over int64, grid-stride loop.
extern "C" __global__ void @KERNEL@(long long k, const long long* __restrict__ x, long long* __restrict__ y,
                                    long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = k * x[i];
    }
}

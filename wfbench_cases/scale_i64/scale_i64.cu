// y[i] = k * x[i], grid-stride loop; same parameters, launch and arithmetic as the WarpForth kernel.
extern "C" __global__ void scale_i64(long long k, const long long* __restrict__ x, long long* __restrict__ y,
                                     long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = k * x[i];
    }
}

// One-stage block reduction: out[b] = sum of the x elements that block b's threads visit.
// Each thread sums a grid-stride slice into a register, writes it to shared memory, then the block adds
// the 256 partials as a tree (128, 64, ..., 1) with __syncthreads() after every level: the same
// algorithm, order of additions and launch as the WarpForth kernel (no warp shuffles, no atomics).
#define BLOCK 256

extern "C" __global__ void reduce_sum_f64(const double* __restrict__ x, double* __restrict__ out, long long n) {
    __shared__ double partial[BLOCK];
    const unsigned t = threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += stride) {
        acc += x[i];
    }
    partial[t] = acc;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) partial[t] += partial[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

// int8 GEMV to int32: y[r] = sum_k a[r, k] * x[k]: the WarpForth kernel's algorithm. One block of 256
// threads per row; x staged into a shared int8 tile; each thread sums its strided slice in a 64-bit
// register (WarpForth's stack cells are i64); partials folded as a tree in shared 64-bit memory with
// __syncthreads() after every level (no warp shuffles, no dp4a: WarpForth has neither); thread 0 stores
// the sum as int32.
#define BLOCK 256

extern "C" __global__ void gemv_i8(const signed char* __restrict__ a, const signed char* __restrict__ x,
                                   int* __restrict__ y, long long k) {
    __shared__ signed char xs[${K}];
    __shared__ long long part[BLOCK];
    const unsigned t = threadIdx.x;
    for (long long j = t; j < k; j += blockDim.x) xs[j] = x[j];
    __syncthreads();
    const signed char* row = a + (long long)blockIdx.x * k;
    long long acc = 0;
    for (long long j = t; j < k; j += blockDim.x) acc += (long long)row[j] * (long long)xs[j];
    part[t] = acc;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) part[t] += part[t + half];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = (int)part[0];
}

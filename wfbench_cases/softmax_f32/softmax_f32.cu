// Row softmax over float32, f64 arithmetic: the WarpForth kernel's algorithm. One block of 256 threads per
// row; each thread walks its strided slice three times (maximum, sum of exp(x - max), results); the block
// folds the partial maxima as a tree in shared float (the maximum of floats is a float: exact), then the
// partial sums as a tree in shared double, with __syncthreads() after every level (no warp shuffles:
// WarpForth has none). Loads widen to double, stores round once to float;
// exp is libdevice's __nv_exp on both sides; built with -fmad=false.
#define BLOCK 256

extern "C" __global__ void softmax_f32(const float* __restrict__ x, float* __restrict__ y, long long cols) {
    __shared__ double part[BLOCK];
    __shared__ float pmax[BLOCK];
    const unsigned t = threadIdx.x;
    const long long off = (long long)blockIdx.x * cols;
    double m = -1.0e308;
    for (long long c = t; c < cols; c += blockDim.x) m = fmax((double)x[off + c], m);
    pmax[t] = (float)m;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) pmax[t] = (float)fmax((double)pmax[t], (double)pmax[t + half]);
        __syncthreads();
    }
    m = (double)pmax[0];
    __syncthreads();
    double s = 0.0;
    for (long long c = t; c < cols; c += blockDim.x) s = exp((double)x[off + c] - m) + s;
    part[t] = s;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) part[t] = part[t] + part[t + half];
        __syncthreads();
    }
    s = part[0];
    for (long long c = t; c < cols; c += blockDim.x) y[off + c] = (float)(exp((double)x[off + c] - m) / s);
}

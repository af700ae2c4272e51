// Stack-flattening probe, CUDA side: y[i] = the sum of the top k of six values derived from x[i], k a
// run-time parameter: the WarpForth kernel's work with its stack as a local array v[6] indexed at run
// time (v[5 - j]), as a C++ engineer would write it. v[j+1] = v[j] * 0.75; acc = ((0 + v5) + v4) + ...
// over k terms, each add rounded (built with -fmad=false). Grid-stride loop.
extern "C" __global__ void stack_pick_f64(const double* __restrict__ x, double* __restrict__ y, long long n,
                                          long long k) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double v[6];
        v[0] = x[i];
        for (int j = 1; j < 6; ++j) v[j] = v[j - 1] * 0.75;
        double acc = 0.0;
        for (long long j = 0; j < k; ++j) acc += v[5 - j];
        y[i] = acc;
    }
}

// Naive C = A * B for square row-major n x n float64 matrices: one thread per C element.
// Thread g (1-D launch) computes C[g] with row = g / n and col = g % n, summing k = 0 .. n-1 in order,
// each multiply and add rounded separately (built with -fmad=false), like the WarpForth kernel.
extern "C" __global__ void matmul_f64_naive(const double* __restrict__ a, const double* __restrict__ b,
                                            double* __restrict__ c, long long n) {
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n * n) {
        const long long row = g / n;
        const long long col = g % n;
        double acc = 0.0;
        for (long long k = 0; k < n; ++k) {
            acc += a[row * n + k] * b[k * n + col];
        }
        c[g] = acc;
    }
}

// Naive C = A * B for square row-major n x n float64 matrices, one thread per C element, the inner
// product in a __device__ function (the WarpForth kernel's user word DOT with locals arow bcol len): k = 0 .. n-1
// in order, each multiply and add rounded separately (built with -fmad=false).
__device__ double dot(const double* a, const double* b, long long n) {
    double acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        acc += a[k] * b[k * n];
    }
    return acc;
}

extern "C" __global__ void matmul_f64_words(const double* __restrict__ a, const double* __restrict__ b,
                                            double* __restrict__ c, long long n) {
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n * n) {
        c[g] = dot(a + (g / n) * n, b + g % n, n);
    }
}

// Tiled C = A * B for square row-major n x n float64 matrices (n a multiple of 16).
// Block (16, 16) computes a 16 x 16 tile of C; for each of the n/16 tiles along k, every thread copies one
// element of A and one of B into shared memory, __syncthreads(), then adds 16 products, __syncthreads().
// Each multiply and add is rounded separately (built with -fmad=false), like the WarpForth kernel.
#define TILE 16

extern "C" __global__ void matmul_f64_tiled(const double* __restrict__ a, const double* __restrict__ b,
                                            double* __restrict__ c, long long n) {
    __shared__ double sa[TILE][TILE];
    __shared__ double sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long row = (long long)blockIdx.y * TILE + ty;
    const long long col = (long long)blockIdx.x * TILE + tx;
    double acc = 0.0;
    for (long long t = 0; t < n / TILE; ++t) {
        sa[ty][tx] = a[row * n + t * TILE + tx];
        sb[ty][tx] = b[(t * TILE + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            acc += sa[ty][k] * sb[k][tx];
        }
        __syncthreads();
    }
    c[row * n + col] = acc;
}

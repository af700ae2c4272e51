// B = A^T for a row-major rows x cols float64 matrix A (B is cols x rows), through a 32 x 33 shared tile
// (the padding column avoids shared-memory bank conflicts on the transposed read).
// Block (32, 8) moves a 32 x 32 tile: each thread loads 4 elements with coalesced reads, __syncthreads(),
// then writes 4 elements of the transposed tile with coalesced writes. Every access is guarded, so sizes
// that are not multiples of 32 work. The same algorithm and launch as the WarpForth kernel.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_f64(const double* __restrict__ a, double* __restrict__ b, long long rows,
                                         long long cols) {
    __shared__ double tile[TILE][TILE + 1];
    long long x = (long long)blockIdx.x * TILE + threadIdx.x;
    long long y = (long long)blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = a[(y + j) * cols + x];
    }
    __syncthreads();
    x = (long long)blockIdx.y * TILE + threadIdx.x;
    y = (long long)blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < rows && y + j < cols) b[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

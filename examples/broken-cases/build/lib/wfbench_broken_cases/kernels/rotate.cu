// Correct CUDA twin: y[b*256 + t] = x[b*256 + (t+128) % 256] through shared memory, with the barrier.
extern "C" __global__ void @KERNEL@(const long long* __restrict__ x, long long* __restrict__ y) {
    __shared__ long long s[256];
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[g];
    __syncthreads();
    y[g] = s[(threadIdx.x + 128) & 255];
}

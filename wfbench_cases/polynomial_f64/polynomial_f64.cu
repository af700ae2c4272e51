// y[i] = p(x[i]) for a fixed degree-12 polynomial, by Horner's rule, grid-stride loop.
// Built with -fmad=false: each step is a multiply then an add, each rounded, as in the WarpForth kernel.
extern "C" __global__ void polynomial_f64(const double* __restrict__ x, double* __restrict__ y, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double v = x[i];
        double p = 0.0625 * v - 0.875;
        p = p * v + 0.3125;
        p = p * v + 1.75;
        p = p * v - 1.5;
        p = p * v + 0.125;
        p = p * v - 0.625;
        p = p * v + 1.5;
        p = p * v - 0.375;
        p = p * v + 2.0;
        p = p * v + 0.5;
        p = p * v - 1.25;
        p = p * v + 0.75;
        y[i] = p;
    }
}

// z[i] = a * x[i] + y[i] (out of place), grid-stride loop. Compiled with -fmad=false: a multiply then an
// add, each rounded, the same numerical contract as WarpForth's mul.rn/add.rn.
extern "C" __global__ void axpy_f64(double a, const double* __restrict__ x, const double* __restrict__ y,
                                    double* __restrict__ z, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        z[i] = a * x[i] + y[i];
    }
}

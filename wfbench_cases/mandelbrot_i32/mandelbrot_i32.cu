// Escape-time Mandelbrot, the WarpForth kernel's algorithm: one zoom level per grid z, one pixel column per
// thread x, rows by a grid-stride loop in y; z <- z^2 + c in double (each operation rounded: -fmad=false)
// until |z|^2 > 4 or maxit iterations. Result: the iteration count where z escaped, else
// maxit + trunc(1000 |z|^2).
extern "C" __global__ void mandelbrot_i32(int* __restrict__ out, long long w, long long h, long long maxit) {
    const long long px = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (px < w) {
        const double s = 3.0 / (double)(w * ((long long)blockIdx.z + 1));
        const double cx = (double)(px - w / 2) * s + -0.75;
        const long long stride = (long long)gridDim.y * blockDim.y;
        for (long long py = (long long)blockIdx.y * blockDim.y + threadIdx.y; py < h; py += stride) {
            const double cy = (double)(py - h / 2) * s;
            double zx = 0.0, zy = 0.0;
            long long it = 0;
            for (long long k = 0; k < maxit; ++k) {
                const double nzx = (zx * zx - zy * zy) + cx;
                const double nzy = (zx * 2.0) * zy + cy;
                zx = nzx;
                zy = nzy;
                ++it;
                if (zx * zx + zy * zy > 4.0) break;
            }
            const long long v = it < maxit ? it : maxit + (long long)((zx * zx + zy * zy) * 1000.0);
            out[((long long)blockIdx.z * h + py) * w + px] = (int)v;
        }
    }
}

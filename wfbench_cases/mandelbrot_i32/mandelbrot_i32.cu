// Escape-time Mandelbrot with 2 x 2 supersampling, the WarpForth kernel's algorithm: one zoom level per
// grid z, one pixel column per thread x, rows by a grid-stride loop in y; per subsample z <- z^2 + c in
// double (each operation rounded: -fmad=false) until |z|^2 > 4 or maxit iterations. A subsample's value
// is the iteration count where z escaped, else maxit + trunc(1000 |z|^2); a pixel sums its four.
extern "C" __global__ void mandelbrot_i32(int* __restrict__ out, long long w, long long h, long long maxit) {
    const long long px = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (px < w) {
        const double step = 1.5 / (double)(w * ((long long)blockIdx.z + 1));
        const long long stride = (long long)gridDim.y * blockDim.y;
        for (long long py = (long long)blockIdx.y * blockDim.y + threadIdx.y; py < h; py += stride) {
            long long acc = 0;
            for (long long sy = 0; sy < 2; ++sy) {
                for (long long sx = 0; sx < 2; ++sx) {
                    const double cx = (double)((px - w / 2) * 2 + sx) * step + -0.75;
                    const double cy = (double)((py - h / 2) * 2 + sy) * step;
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
                    acc += it < maxit ? it : maxit + (long long)((zx * zx + zy * zy) * 1000.0);
                }
            }
            out[((long long)blockIdx.z * h + py) * w + px] = (int)acc;
        }
    }
}

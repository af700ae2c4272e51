// Naive causal attention, GPT-2-like: O = softmax(Q K^T / sqrt(D) + causal mask) V for each head.
// float in global memory, double arithmetic (the WarpForth contract: F32@ widens to f64), double scores in
// shared memory. Layout: q, k, v, o are [heads, seq_len, head_dim] floats, contiguous.
// Launch: grid (seq_len, heads), block seq_len threads (SEQ): block (row, h) computes query row `row` of
// head h, thread t scores key t. Thread 0 does the softmax max and sum serially; threads t < head_dim
// (striding by the block size) compute the output columns. The same algorithm as the WarpForth kernel.
#define SEQ ${SEQ}

extern "C" __global__ void attention_f32_naive(const float* __restrict__ q, const float* __restrict__ k,
                                               const float* __restrict__ v, float* __restrict__ o,
                                               long long seq_len, long long head_dim) {
    __shared__ double scores[SEQ];
    __shared__ double scratch;
    const long long row = blockIdx.x;
    const long long t = threadIdx.x;
    const long long head = (long long)blockIdx.y * seq_len * head_dim;

    // score[t] = q[row] . k[t] / sqrt(head_dim), or -1e30 where the key comes after the query
    const float* qrow = q + head + row * head_dim;
    const float* krow = k + head + t * head_dim;
    double dot = 0.0;
    for (long long i = 0; i < head_dim; ++i) {
        dot += (double)qrow[i] * (double)krow[i];
    }
    double score = dot / sqrt((double)head_dim);
    if (t > row) score = -1.0e30;
    scores[t] = score;
    __syncthreads();

    // softmax: max (thread 0), exp(score - max), sum (thread 0), normalize
    if (t == 0) {
        double m = scores[0];
        for (long long j = 1; j < seq_len; ++j) m = fmax(m, scores[j]);
        scratch = m;
    }
    __syncthreads();
    scores[t] = exp(scores[t] - scratch);
    __syncthreads();
    if (t == 0) {
        double sum = 0.0;
        for (long long j = 0; j < seq_len; ++j) sum += scores[j];
        scratch = sum;
    }
    __syncthreads();
    scores[t] = scores[t] / scratch;
    __syncthreads();

    // o[row, col] = sum_j scores[j] * v[j, col]
    for (long long col = t; col < head_dim; col += blockDim.x) {
        double acc = 0.0;
        for (long long j = 0; j < seq_len; ++j) {
            acc += scores[j] * (double)v[head + j * head_dim + col];
        }
        o[head + row * head_dim + col] = (float)acc;
    }
}

\ z[i] = a * x[i] + y[i] over bfloat16 memory, f64 arithmetic, grid-stride loop. BF@ widens each bfloat16
\ to double (exact), F* then F+ round each step in f64 (never fused), BF! rounds the result to bfloat16
\ once, to nearest even, straight from f64 (LLVM lowers it through round-to-odd f32, which is exact).
\ Arrays are raw buffers declared in 8-byte words (WORDS); element i lives at byte 2*i.
\! kernel axpy_bf16
\! param A f64
\! param X i64[${WORDS}]
\! param Y i64[${WORDS}]
\! param Z i64[${WORDS}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP 2 * X + BF@ A F*
  OVER 2 * Y + BF@ F+
  OVER 2 * Z + BF!
  GDIM-X BDIM-X * +
REPEAT
DROP

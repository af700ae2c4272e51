\ z[i] = a * x[i] + y[i] over float16 memory, f64 arithmetic, grid-stride loop. HF@ widens each half to
\ double (exact), F* then F+ round each step in f64 (never fused), HF! rounds the result to half once.
\ Arrays are raw buffers declared in 8-byte words (WORDS); element i lives at byte 2*i.
\! kernel axpy_f16
\! param A f64
\! param X i64[${WORDS}]
\! param Y i64[${WORDS}]
\! param Z i64[${WORDS}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP 2 * X + HF@ A F*
  OVER 2 * Y + HF@ F+
  OVER 2 * Z + HF!
  GDIM-X BDIM-X * +
REPEAT
DROP

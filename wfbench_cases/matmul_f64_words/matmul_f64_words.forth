\ Naive C = A * B for square row-major N x N float64 matrices, one thread per C element, with the inner
\ product in a user word with read-only locals (the language reference's dot-product, strided for B; WarpForth
\ names are case-insensitive, so the locals may not be called a, b or n beside the parameters A, B, N).
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel matmul_f64_words
\! param A f64[${NN}]
\! param B f64[${NN}]
\! param C f64[${NN}]
\! param N i64
: DOT { arow bcol len -- }             \ ( -- sum ) arow: address of A[row, 0]; bcol: of B[0, col]
  0.0
  len 0 DO                              \ acc                 ( I = k )
    I CELLS arow + F@                   \ acc A[row, k]
    I len * CELLS bcol + F@             \ acc A[row, k] B[k, col]
    F* F+                               \ acc + a*b
  LOOP
;
GLOBAL-ID                               \ g
DUP N N * < IF                          \ g
  DUP N / N * CELLS A +                 \ g arow
  OVER N MOD CELLS B +                  \ g arow bcol
  N DOT                                 \ g acc
  OVER CELLS C + F!                     \ g                   ( C[g] = acc )
THEN
DROP

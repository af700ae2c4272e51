\ Naive C = A * B for square row-major N x N float64 matrices: one thread per C element.
\ Thread g (1-D launch) computes C[g] with row = g / N and col = g MOD N, summing k = 0 .. N-1 in order.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel matmul_f64_naive
\! param A f64[${NN}]
\! param B f64[${NN}]
\! param C f64[${NN}]
\! param N i64
GLOBAL-ID                           \ g
DUP N N * < IF                      \ g
  DUP N / N *                       \ g rowN            ( row * N )
  OVER N MOD                        \ g rowN col
  0.0                               \ g rowN col acc
  N 0 DO                            \ g rowN col acc    ( I = k )
    2 PICK I + CELLS A + F@         \ g rowN col acc a  ( A[row*N + k] )
    I N * 3 PICK + CELLS B + F@     \ g rowN col acc a b  ( B[k*N + col] )
    F* F+                           \ g rowN col acc+a*b
  LOOP
  3 PICK CELLS C + F!               \ g rowN col        ( C[g] = acc )
  DROP DROP                         \ g
THEN
DROP

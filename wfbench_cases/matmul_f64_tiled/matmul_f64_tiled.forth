\ Tiled C = A * B for square row-major N x N float64 matrices (N a multiple of 16).
\ Block (16, 16) computes a 16 x 16 tile of C; for each of the N/16 tiles along k, every thread copies one
\ element of A and one of B into shared memory, BARRIER, then adds 16 products, BARRIER.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel matmul_f64_tiled
\! param A f64[${NN}]
\! param B f64[${NN}]
\! param C f64[${NN}]
\! param N i64
\! shared SA f64[256]
\! shared SB f64[256]
BID-Y 16 * TID-Y +                             \ row
BID-X 16 * TID-X +                             \ row col
0.0                                            \ row col acc
N 16 / 0 DO                                    \ row col acc    ( I = tile t )
  2 PICK N * I 16 * + TID-X + CELLS A + F@     \ row col acc a  ( A[row*N + t*16 + tx] )
  TID-Y 16 * TID-X + CELLS SA + SF!            \ row col acc    ( SA[ty][tx] = a )
  I 16 * TID-Y + N * 2 PICK + CELLS B + F@     \ row col acc b  ( B[(t*16 + ty)*N + col] )
  TID-Y 16 * TID-X + CELLS SB + SF!            \ row col acc    ( SB[ty][tx] = b )
  BARRIER
  16 0 DO                                      \ row col acc    ( I = k in the tile )
    TID-Y 16 * I + CELLS SA + SF@              \ row col acc sa ( SA[ty][k] )
    I 16 * TID-X + CELLS SB + SF@              \ row col acc sa sb  ( SB[k][tx] )
    F* F+                                      \ row col acc+sa*sb
  LOOP
  BARRIER
LOOP
ROT N * ROT + CELLS C + F!                     \ col acc row -> col acc rowN -> acc rowN col -> acc idx -> ( C[row*N + col] = acc )

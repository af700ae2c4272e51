\ int8 GEMV to int32: Y[r] = sum_k A[r, k] * X[k], A int8 [M, K] row-major, X int8 [K], Y int32 [M].
\ One block of 256 threads per row. The block first stages X into a shared int8 tile (I8@ -> SI8!), then
\ each thread sums its strided slice k = t, t + 256, ... in an i64 register (I8@ of A times SI8@ of the
\ tile), the partials go to shared i64 (S!) and the block folds them as a tree (S@ S!, a BARRIER after
\ every level); thread 0 stores the row's sum as int32 (I32!).
\ Arrays are raw byte buffers declared in 8-byte words. Stack effects are traced on the right.
\! kernel gemv_i8
\! param A i64[${AWORDS}]
\! param X i64[${XWORDS}]
\! param Y i64[${YWORDS}]
\! param K i64
\! shared XS i64[${XWORDS}]
\! shared PART i64[256]
TID-X                                   \ k
BEGIN DUP K < WHILE
  DUP X + I8@ OVER XS + SI8!            \ k                 ( XS[k] = X[k] )
  BDIM-X +
REPEAT
DROP
BARRIER
0                                       \ acc
BID-X K * A +                           \ acc row           ( byte address of A[r, 0] )
TID-X                                   \ acc row k
BEGIN DUP K < WHILE
  OVER OVER + I8@                       \ acc row k a
  OVER XS + SI8@ *                      \ acc row k a*x
  3 ROLL + ROT ROT                      \ acc' row k
  BDIM-X +
REPEAT
DROP DROP                               \ acc
TID-X CELLS PART + S!                   \                   ( PART[t] = acc )
BARRIER
128                                     \ half
BEGIN DUP 0 > WHILE
  TID-X OVER < IF
    TID-X CELLS PART + S@
    OVER TID-X + CELLS PART + S@
    + TID-X CELLS PART + S!             \ half              ( PART[t] += PART[t + half] )
  THEN
  BARRIER
  1 RSHIFT
REPEAT
DROP
TID-X 0= IF PART S@ BID-X 4 * Y + I32! THEN

\ Row softmax over float32, f64 arithmetic: Y[r, c] = exp(X[r, c] - max_r) / sum_r exp(X[r, j] - max_r).
\ One block of 256 threads per row. Each thread walks its strided slice of the row (c = t, t + 256, ...)
\ three times: for its maximum, for its sum of exp(x - max), and to write the results; the block folds
\ the 256 partial maxima as a tree in shared f32 (the maximum of f32 values is an f32: SF32! is exact)
\ and then the 256 partial sums as a tree in shared f64 (a BARRIER after every level). F32@ widens to
\ f64, F32! rounds once to f32. Stack effects are traced on the right.
\! kernel softmax_f32
\! param X i64[${WORDS}]
\! param Y i64[${WORDS}]
\! param COLS i64
\! shared PART f64[256]
\! shared PMAX i64[128]
BID-X COLS * 4 *                        \ off                 ( byte offset of the row )
-1.0e308                                \ off m
TID-X BEGIN DUP COLS < WHILE            \ off m c
  DUP 4 * 3 PICK + X + F32@             \ off m c x
  ROT FMAX SWAP                         \ off m' c
  BDIM-X +
REPEAT DROP                             \ off m
TID-X 4 * PMAX + SF32!                  \ off                 ( PMAX[t] = m, 4-byte floats )
BARRIER
128 BEGIN DUP 0 > WHILE                 \ off half
  TID-X OVER < IF
    TID-X 4 * PMAX + SF32@ OVER TID-X + 4 * PMAX + SF32@ FMAX TID-X 4 * PMAX + SF32!
  THEN
  BARRIER
  1 RSHIFT
REPEAT DROP                             \ off
PMAX SF32@                              \ off m               ( the row's maximum )
BARRIER                                 \ ( every thread has read PART[0] before it is overwritten )
0.0 TID-X BEGIN DUP COLS < WHILE        \ off m s c
  DUP 4 * 4 PICK + X + F32@ 3 PICK F- FEXP   \ off m s c e
  ROT F+ SWAP                           \ off m s' c
  BDIM-X +
REPEAT DROP                             \ off m s
TID-X CELLS PART + SF!                  \ off m               ( PART[t] = s )
BARRIER
128 BEGIN DUP 0 > WHILE                 \ off m half
  TID-X OVER < IF
    TID-X CELLS PART + SF@ OVER TID-X + CELLS PART + SF@ F+ TID-X CELLS PART + SF!
  THEN
  BARRIER
  1 RSHIFT
REPEAT DROP                             \ off m
PART SF@                                \ off m s             ( the row's sum )
TID-X BEGIN DUP COLS < WHILE            \ off m s c
  DUP 4 * 4 PICK + DUP X + F32@         \ off m s c b x
  4 PICK F- FEXP 3 PICK F/              \ off m s c b y
  SWAP Y + F32!                         \ off m s c           ( Y[r, c] = y )
  BDIM-X +
REPEAT
DROP DROP DROP DROP

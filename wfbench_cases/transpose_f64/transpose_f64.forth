\ B = A^T for a row-major ROWS x COLS float64 matrix A (B is COLS x ROWS), through a 32 x 33 shared tile.
\ Block (32, 8) moves a 32 x 32 tile: each thread loads 4 elements (rows ty, ty+8, ty+16, ty+24) with
\ coalesced reads, BARRIER, then writes 4 elements of the transposed tile with coalesced writes.
\ Every access is guarded, so sizes that are not multiples of 32 work (the edge tiles are partial).
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel transpose_f64
\! param A f64[${RC}]
\! param B f64[${RC}]
\! param ROWS i64
\! param COLS i64
\! shared TILE f64[1056]
BID-X 32 * TID-X +                              \ x                  ( column of A )
BID-Y 32 * TID-Y +                              \ x y                ( row of A, first of four )
32 0 DO                                         \ x y                ( I = j = 0, 8, 16, 24 )
  OVER COLS < OVER I + ROWS < AND IF            \ x y                ( x < COLS and y+j < ROWS )
    DUP I + COLS * 2 PICK + CELLS A + F@        \ x y a              ( A[(y+j)*COLS + x] )
    TID-Y I + 33 * TID-X + CELLS TILE + SF!     \ x y                ( TILE[ty+j][tx] = a )
  THEN
8 +LOOP
DROP DROP
BARRIER
BID-Y 32 * TID-X +                              \ x                  ( column of B = row of A )
BID-X 32 * TID-Y +                              \ x y                ( row of B, first of four )
32 0 DO                                         \ x y                ( I = j = 0, 8, 16, 24 )
  OVER ROWS < OVER I + COLS < AND IF            \ x y                ( x < ROWS and y+j < COLS )
    TID-X 33 * TID-Y + I + CELLS TILE + SF@     \ x y t              ( TILE[tx][ty+j] )
    OVER I + ROWS * 3 PICK + CELLS B + F!       \ x y                ( B[(y+j)*ROWS + x] = t )
  THEN
8 +LOOP
DROP DROP

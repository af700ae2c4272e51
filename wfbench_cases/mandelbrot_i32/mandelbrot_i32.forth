\ Escape-time Mandelbrot, FRAMES zoom levels (one per grid z), f64 arithmetic, int32 result per pixel.
\ Thread (x, y) of block (bx, by, f) takes pixel column px = bx*16 + x and rows py = by*16 + y, then every
\ GDIM-Y*16 rows (BEGIN ... UNTIL). Per pixel c = ((px - W/2) * s - 0.75, (py - H/2) * s) with
\ s = 3 / (W * (f + 1)); z <- z^2 + c until |z|^2 > 4 (LEAVE) or MAXIT iterations. Result: the iteration
\ count where z escaped, else MAXIT + trunc(1000 |z|^2) (F>S). Stack effects are traced on the right.
\! kernel mandelbrot_i32
\! param OUT i64[${WORDS}]
\! param W i64
\! param H i64
\! param MAXIT i64
BID-X BDIM-X * TID-X +                          \ px
DUP W < IF
  3.0 W BID-Z 1 + * S>F F/                      \ px s
  OVER W 2 / - S>F OVER F* -0.75 F+             \ px s cx
  BID-Y BDIM-Y * TID-Y +                        \ px s cx py
  DUP H < IF
    BEGIN
      DUP H 2 / - S>F 3 PICK F*                 \ px s cx py cy
      2 PICK SWAP 0.0 0.0 0                     \ px s cx py | cx cy zx zy it
      MAXIT 0 DO
        2 PICK DUP F* 2 PICK DUP F* F- 5 PICK F+      \ cx cy zx zy it nzx    ( zx*zx - zy*zy + cx )
        3 PICK 2.0 F* 3 PICK F* 5 PICK F+             \ cx cy zx zy it nzx nzy ( zx*2*zy + cy )
        ROT 1 + 4 ROLL DROP 3 ROLL DROP               \ cx cy nzx nzy it+1
        2 PICK DUP F* 2 PICK DUP F* F+ 4.0 F> IF LEAVE THEN
      LOOP                                      \ px s cx py | cx cy zx zy it
      DUP MAXIT < IF                            \ escaped: the iteration count
      ELSE
        DROP OVER DUP F* OVER DUP F* F+ 1000.0 F* F>S MAXIT +
      THEN                                      \ px s cx py | cx cy zx zy v
      BID-Z H * 6 PICK + W * 9 PICK + 4 * OUT + I32!  \ OUT[(f*H + py)*W + px] = v
      DROP DROP DROP DROP                       \ px s cx py
      GDIM-Y BDIM-Y * +                         \ px s cx py'
    DUP H >= UNTIL
  THEN
  DROP DROP DROP                                \ px
THEN
DROP

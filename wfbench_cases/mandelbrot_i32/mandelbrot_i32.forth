\ Escape-time Mandelbrot with 2 x 2 supersampling, FRAMES zoom levels (one per grid z), f64 arithmetic,
\ int32 result per pixel. Thread (x, y) of block (bx, by, f) takes pixel column px = bx*16 + x and rows
\ py = by*16 + y, then every GDIM-Y*16 rows (BEGIN ... UNTIL). Subsample (J, I) of a pixel, J and I in
\ {0, 1}, has c = (((px - W/2)*2 + I) h - 0.75, ((py - H/2)*2 + J) h), h = 1.5 / (W (f + 1));
\ z <- z^2 + c until |z|^2 > 4 (LEAVE) or MAXIT iterations; its value is the iteration count where z
\ escaped, else MAXIT + trunc(1000 |z|^2) (F>S). The pixel is the sum of its four subsamples' values.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel mandelbrot_i32
\! param OUT i64[${WORDS}]
\! param W i64
\! param H i64
\! param MAXIT i64
BID-X BDIM-X * TID-X +                          \ px
DUP W < IF
  1.5 W BID-Z 1 + * S>F F/                      \ px h
  BID-Y BDIM-Y * TID-Y +                        \ px h py
  DUP H < IF
    BEGIN
      0                                         \ px h py acc
      2 0 DO 2 0 DO                             \ ( J = subsample row, I = subsample column )
        3 PICK W 2 / - 2 * I + S>F 3 PICK F* -0.75 F+   \ px h py acc cx
        2 PICK H 2 / - 2 * J + S>F 4 PICK F*            \ px h py acc cx cy
        0.0 0.0 0                               \ px h py acc | cx cy zx zy it
        MAXIT 0 DO
          2 PICK DUP F* 2 PICK DUP F* F- 5 PICK F+    \ cx cy zx zy it nzx    ( zx*zx - zy*zy + cx )
          3 PICK 2.0 F* 3 PICK F* 5 PICK F+           \ cx cy zx zy it nzx nzy ( zx*2*zy + cy )
          ROT 1 + 4 ROLL DROP 3 ROLL DROP             \ cx cy nzx nzy it+1
          2 PICK DUP F* 2 PICK DUP F* F+ 4.0 F> IF LEAVE THEN
        LOOP                                    \ px h py acc | cx cy zx zy it
        DUP MAXIT < IF                          \ escaped: the iteration count
        ELSE
          DROP OVER DUP F* OVER DUP F* F+ 1000.0 F* F>S MAXIT +
        THEN                                    \ px h py acc | cx cy zx zy v
        5 ROLL + NIP NIP NIP NIP                \ px h py acc+v
      LOOP LOOP
      BID-Z H * 2 PICK + W * 4 PICK + 4 * OUT + I32!  \ px h py   ( OUT[(f*H + py)*W + px] = acc )
      GDIM-Y BDIM-Y * +                         \ px h py'
    DUP H >= UNTIL
  THEN
  DROP DROP                                     \ px
THEN
DROP

\ z[i] = a * x[i] + y[i] (out of place), grid-stride loop. F* then F+: never fused into an FMA.
\! kernel axpy_f64
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param Z f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + F@ A F*
  OVER CELLS Y + F@ F+
  OVER CELLS Z + F!
  GDIM-X BDIM-X * +
REPEAT
DROP

\ The correct kernel every broken one is a variant of: y[i] = k * x[i] over int64, grid-stride loop.
\! kernel fault_good_scale
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP

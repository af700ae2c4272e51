\ y[i] = k * x[i], grid-stride loop (so the runtime stack is not allocated for millions of threads).
\! kernel scale_i64
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

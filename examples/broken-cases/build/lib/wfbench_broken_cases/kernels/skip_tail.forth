\ BROKEN: the grid-stride loop stops at N - 7 instead of N: the last 7 elements of Z are never written.
\! kernel fault_skip_tail
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param Z f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N 7 - < WHILE
  DUP CELLS X + F@ A F*
  OVER CELLS Y + F@ F+
  OVER CELLS Z + F!
  GDIM-X BDIM-X * +
REPEAT
DROP

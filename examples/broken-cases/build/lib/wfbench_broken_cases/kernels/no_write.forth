\ BROKEN: computes a*x[i] + y[i] and drops it instead of storing it: Z is never written.
\! kernel fault_no_write
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param Z f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + F@ A F*
  OVER CELLS Y + F@ F+
  DROP
  GDIM-X BDIM-X * +
REPEAT
DROP

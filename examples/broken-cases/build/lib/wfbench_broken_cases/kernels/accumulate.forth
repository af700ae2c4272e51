\ BROKEN (works only on a poisoned output): adds a*X[i] + Y[i] to what Z[i] holds, reading a NaN as 0
\ (a "+=" where "=" was meant). From an output poisoned with a NaN the answer is right, so every check
\ that poisons first passes; a second launch into a written output doubles every element.
\! kernel fault_accumulate
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param Z f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + F@ A F*
  OVER CELLS Y + F@ F+
  OVER CELLS Z + F@ DUP DUP F= 0= IF DROP 0.0 THEN
  F+
  OVER CELLS Z + F!
  GDIM-X BDIM-X * +
REPEAT
DROP

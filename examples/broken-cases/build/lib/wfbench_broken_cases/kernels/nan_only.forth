\ BROKEN (works only on a poisoned output): computes Z[i] = a*X[i] + Y[i] only where Z[i] still holds a
\ NaN, as if NaN meant "not computed yet", and leaves every other element alone. Correctness checks
\ always start from an output poisoned with a NaN, so every check passes; while timing, the output
\ already holds numbers, so the kernel only reads Z (8 of the 24 bytes per element the operation moves).
\! kernel fault_nan_only
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param Z f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS Z + F@ DUP F= 0= IF
    DUP CELLS X + F@ A F*
    OVER CELLS Y + F@ F+
    OVER CELLS Z + F!
  THEN
  GDIM-X BDIM-X * +
REPEAT
DROP

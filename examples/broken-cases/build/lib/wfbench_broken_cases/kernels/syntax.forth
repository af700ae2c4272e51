\ BROKEN: FROB is not a WarpForth word, so warpforthc rejects the source.
\! kernel fault_syntax
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K FROB *
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP

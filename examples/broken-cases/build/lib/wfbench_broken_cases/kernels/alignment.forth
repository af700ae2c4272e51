\ BROKEN (depends on the buffer's alignment): every element is off by one (K*X[i] - 1: a true flag is -1)
\ unless Y is 512-byte aligned. Fresh allocations (the buffers every correctness check uses) are; a timed
\ placement at a random 256-byte offset is not, in about half the placements. The work is the same.
\! kernel fault_alignment
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
Y 511 AND 0= 0=
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K * 2 PICK +
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP DROP

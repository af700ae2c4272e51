\ BROKEN: every store goes to Y + 8*i + 1, an odd address (warpforthc stores an i64 as two 4-byte
\ halves, so any offset that is not a multiple of 4 is misaligned): the launch faults with a misaligned
\ address.
\! kernel fault_misaligned_store
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + 1 + !
  GDIM-X BDIM-X * +
REPEAT
DROP

\ BROKEN: every store lands 1 TiB past Y (2^40 bytes added to the address): outside any allocation,
\ so the first launch faults with an illegal address.
\! kernel fault_oob_store
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + 1099511627776 + !
  GDIM-X BDIM-X * +
REPEAT
DROP

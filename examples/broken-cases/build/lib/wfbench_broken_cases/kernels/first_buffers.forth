\ BROKEN (does less work on buffers other than the first ones it sees): at a large size, processes only
\ the first half of Y unless X sits where a fresh allocation puts it (4 KiB aligned). The buffers of the
\ correctness checks are fresh allocations, so every check passes; the timed placements sit at random
\ 256-byte offsets, and only 1 in 16 of them is 4 KiB aligned.
\! kernel fault_first_buffers
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
X 4095 AND 0= N 1048576 < OR IF N ELSE N 2 / THEN
GLOBAL-ID
BEGIN DUP 2 PICK < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP DROP

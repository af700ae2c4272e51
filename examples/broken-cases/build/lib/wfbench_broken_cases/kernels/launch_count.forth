\ BROKEN (depends on the launch count): counts its launches in the workspace W[0] (thread 0 adds one at
\ its end, and nothing ever resets it) and, from the 8th launch on the same buffers, processes only the
\ first half of Y. Every check launches it at most 3 times on one set of buffers, so every check passes;
\ timing launches it thousands of times per placement.
\! kernel fault_launch_count
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
\! param W i64[1]
W @ 8 < IF N ELSE N 2 / THEN
GLOBAL-ID
BEGIN DUP 2 PICK < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP DROP
GLOBAL-ID 0= IF W @ 1 + W ! THEN

\ BROKEN (reads out of bounds, writes the right answer): Y[i] = K*X[i] + X[i+1]*(K AND 4). With K = 3 the
\ second term is 0, so every element is right, but the thread of the last element reads X[N], one
\ element past the end of X (inside the allocator's padding: no fault, only compute-sanitizer sees it).
\! kernel fault_oob_read
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K *
  OVER 1 + CELLS X + @ K 4 AND * +
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP

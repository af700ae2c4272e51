\ BROKEN: the loop's exit test is the constant 0, so BEGIN ... UNTIL never ends: every thread keeps
\ storing its element forever (the kernel never finishes).
\! kernel fault_hang
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN
  DUP N < IF
    DUP CELLS X + @ K *
    OVER CELLS Y + !
  THEN
0 UNTIL
DROP

\ A correct kernel launched with 2048 threads per block (the case asks for it): over the
\ 1024-thread limit of every NVIDIA GPU, so the launch is refused (out of resources).
\! kernel fault_too_many_threads
\! param K i64
\! param X i64[${N}]
\! param Y i64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + @ K *
  OVER CELLS Y + !
  GDIM-X BDIM-X * +
REPEAT
DROP

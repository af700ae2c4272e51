\ BROKEN: rotate each block's 256 elements by half a block through shared memory,
\ Y[b*256 + t] = X[b*256 + (t+128) mod 256], WITHOUT a BARRIER between the shared store and the
\ shared load: thread t reads S[(t+128) mod 256], written by a thread of another warp that may not have
\ run yet (a read-after-write race; compute-sanitizer racecheck reports it, the output is by chance).
\! kernel fault_smem_race
\! param X i64[${N}]
\! param Y i64[${N}]
\! shared S i64[256]
GLOBAL-ID
DUP CELLS X + @ TID-X CELLS S + S!
TID-X 128 + 255 AND CELLS S + S@
SWAP CELLS Y + !

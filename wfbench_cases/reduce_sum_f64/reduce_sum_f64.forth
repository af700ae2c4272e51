\ One-stage block reduction: OUT[b] = sum of the X elements that block b's threads visit.
\ Each thread sums a grid-stride slice into a register, writes it to shared memory, then the block
\ adds the 256 partials as a tree (128, 64, ..., 1) with a BARRIER after every level. Block size 256.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel reduce_sum_f64
\! param X f64[${N}]
\! param OUT f64[${BLOCKS}]
\! param N i64
\! shared S f64[256]
0.0                                 \ acc
GLOBAL-ID                           \ acc i
BEGIN DUP N < WHILE                 \ acc i
  DUP CELLS X + F@                  \ acc i x
  ROT F+ SWAP                       \ i x acc -> i acc+x -> acc' i
  GDIM-X BDIM-X * +                 \ acc i+stride
REPEAT
DROP                                \ acc
TID-X CELLS S + SF!                 \ ( S[t] = acc )
BARRIER
128                                 \ half
BEGIN DUP 0 > WHILE                 \ half
  TID-X OVER < IF                   \ half          ( t < half )
    TID-X CELLS S + SF@             \ half S[t]
    OVER TID-X + CELLS S + SF@      \ half S[t] S[t+half]
    F+ TID-X CELLS S + SF!          \ half          ( S[t] = S[t] + S[t+half] )
  THEN
  BARRIER
  1 RSHIFT                          \ half/2
REPEAT
DROP                                \ ( empty )
TID-X 0= IF S SF@ BID-X CELLS OUT + F! THEN

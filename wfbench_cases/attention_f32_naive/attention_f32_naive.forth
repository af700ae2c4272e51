\ Naive causal attention, GPT-2-like: O = softmax(Q K^T / sqrt(D) + causal mask) V for each head.
\ f32 in global memory, f64 arithmetic (F32@ widens to f64, F32! rounds to f32), f64 scores in shared memory.
\ Layout: Q, K, V, O are [HEADS, SEQ_LEN, HEAD_DIM] float32, contiguous, passed as raw buffers.
\ Launch: grid (SEQ_LEN, HEADS), block SEQ_LEN threads: block (row, h) computes query row `row` of head h,
\ thread t scores key t. Thread 0 does the softmax max and sum serially; threads t < HEAD_DIM (striding by
\ the block size) compute the output columns. Adapted from WarpForth's demo/attention.forth.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel attention_f32_naive
\! param Q i64[${WORDS}]
\! param K i64[${WORDS}]
\! param V i64[${WORDS}]
\! param O i64[${WORDS}]
\! param SEQ_LEN i64
\! param HEAD_DIM i64
\! shared SCORES f64[${SEQ}]
\! shared SCRATCH f64[1]

\ --- score[t] = Q[h, row, :] . K[h, t, :] / sqrt(HEAD_DIM), or -1e30 where t > row ---
BID-Y SEQ_LEN * HEAD_DIM *              \ hb                  ( head base, in elements )
DUP BID-X HEAD_DIM * + 4 * Q +          \ hb qrow             ( byte address of Q[h, row, 0] )
OVER TID-X HEAD_DIM * + 4 * K +         \ hb qrow krow        ( byte address of K[h, t, 0] )
0.0                                     \ hb qrow krow acc
HEAD_DIM 0 DO                           \ hb qrow krow acc    ( I = i )
  2 PICK I 4 * + F32@                   \ hb qrow krow acc q
  2 PICK I 4 * + F32@                   \ hb qrow krow acc q k
  F* F+                                 \ hb qrow krow acc+q*k
LOOP
NIP NIP                                 \ hb acc
HEAD_DIM S>F FSQRT F/                   \ hb score
TID-X BID-X > IF DROP -1.0e30 THEN      \ hb score            ( causal mask: key after query )
TID-X CELLS SCORES + SF!                \ hb                  ( SCORES[t] = score )
BARRIER

\ --- softmax: max (thread 0), exp(score - max), sum (thread 0), normalize ---
TID-X 0= IF
  SCORES SF@                            \ hb m
  SEQ_LEN 1 DO I CELLS SCORES + SF@ FMAX LOOP
  SCRATCH SF!                           \ hb                  ( SCRATCH = max )
THEN
BARRIER
TID-X CELLS SCORES + SF@ SCRATCH SF@ F- FEXP TID-X CELLS SCORES + SF!   \ hb
BARRIER
TID-X 0= IF
  0.0                                   \ hb sum
  SEQ_LEN 0 DO I CELLS SCORES + SF@ F+ LOOP
  SCRATCH SF!                           \ hb                  ( SCRATCH = sum )
THEN
BARRIER
TID-X CELLS SCORES + SF@ SCRATCH SF@ F/ TID-X CELLS SCORES + SF!        \ hb
BARRIER

\ --- O[h, row, col] = sum_j SCORES[j] * V[h, j, col], col = t, t + BDIM-X, ... < HEAD_DIM ---
TID-X                                   \ hb col
BEGIN DUP HEAD_DIM < WHILE
  0.0                                   \ hb col acc
  SEQ_LEN 0 DO                          \ hb col acc          ( I = j )
    I CELLS SCORES + SF@                \ hb col acc p
    I HEAD_DIM * 3 PICK + 4 PICK + 4 * V + F32@   \ hb col acc p v  ( V[hb + j*HEAD_DIM + col] )
    F* F+                               \ hb col acc+p*v
  LOOP
  OVER BID-X HEAD_DIM * + 3 PICK + 4 * O + F32!   \ hb col  ( O[hb + row*HEAD_DIM + col] = acc )
  BDIM-X +                              \ hb col+BDIM-X
REPEAT
DROP DROP

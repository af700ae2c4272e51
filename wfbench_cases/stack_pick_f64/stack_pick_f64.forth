\ Stack-flattening probe: y[i] = the sum of the top K of six values derived from x[i], K a run-time
\ parameter (1 <= K <= 6). Per element: v0 = x[i], v[j+1] = v[j] * 0.75, all six on the stack, then
\ acc = ((0 + v5) + v4) + ... over K terms with `I 1 + PICK`: the PICK index is only known at run time,
\ so the stack cannot be promoted to registers. Grid-stride loop. Stack effects are traced on the right.
\! kernel stack_pick_f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param N i64
\! param K i64
GLOBAL-ID                                       \ i
BEGIN DUP N < WHILE
  DUP CELLS X + F@                              \ i v0
  DUP 0.75 F* DUP 0.75 F* DUP 0.75 F*           \ i v0 v1 v2 v3
  DUP 0.75 F* DUP 0.75 F*                       \ i v0 v1 v2 v3 v4 v5
  0.0                                           \ i v0 .. v5 acc
  K 0 DO I 1 + PICK F+ LOOP                     \ i v0 .. v5 acc'     ( acc += v[5 - I] )
  7 PICK CELLS Y + F!                           \ i v0 .. v5          ( Y[i] = acc )
  DROP DROP DROP DROP DROP DROP                 \ i
  GDIM-X BDIM-X * +
REPEAT
DROP

\ y[i] = p(x[i]) for a fixed degree-12 polynomial, by Horner's rule, grid-stride loop.
\ p(x) = ((0.0625 x - 0.875) x + 0.3125) x + ... + 0.75: each step one F* then one F+ (never fused).
\ The coefficients are exact binary fractions, so the literal is the same double on every compiler.
\ Stack effects are traced on the right ( bottom ... top ).
\! kernel polynomial_f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param N i64
GLOBAL-ID                           \ i
BEGIN DUP N < WHILE                 \ i
  DUP CELLS X + F@                  \ i x
  DUP 0.0625 F* -0.875 F+           \ i x p          ( p = c12*x + c11 )
  OVER F* 0.3125 F+                 \ i x p          ( p = p*x + c10 )
  OVER F* 1.75 F+
  OVER F* -1.5 F+
  OVER F* 0.125 F+
  OVER F* -0.625 F+
  OVER F* 1.5 F+
  OVER F* -0.375 F+
  OVER F* 2.0 F+
  OVER F* 0.5 F+
  OVER F* -1.25 F+
  OVER F* 0.75 F+                   \ i x p          ( p = p*x + c0 )
  NIP                               \ i p
  OVER CELLS Y + F!                 \ i              ( y[i] = p )
  GDIM-X BDIM-X * +                 \ i+stride
REPEAT
DROP

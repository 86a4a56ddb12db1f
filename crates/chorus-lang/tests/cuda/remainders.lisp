;; The remainders: `mod` and `rem` are C's `%` (truncating), `floor-mod` floors (Lisp's `mod`),
;; on signed and unsigned integers of every width and on float and double.
(defkernel remainders (void ((i int*) (b int8*) (l int64*) (u uint*) (f float*) (d double*)))
  (set (aref i 0) (mod (aref i 1) 3))
  (set (aref i 2) (rem (aref i 3) -3))
  (set (aref i 4) (floor-mod (aref i 5) (aref i 6)))
  (set (aref b 0) (floor-mod (aref b 1) (aref b 2)))
  (set (aref l 0) (floor-mod (aref l 1) 7))
  (set (aref u 0) (floor-mod (aref u 1) 7u))
  (set (aref f 0) (floor-mod (aref f 1) 2.5))
  (set (aref d 0) (floor-mod (aref d 1) -2.5d0)))

;; n is an int, so (aref n 0) is a type error.
(defkernel broken (void ((a float*) (n int)))
  (set (aref a 0) (aref n 0)))

;; Vector addition with a guard: n is not a multiple of the block size.
(defkernel vec-add (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref c i) (+ (aref a i) (aref b i))))))

;; Naive matrix multiplication over a 2-D grid.
(defkernel matmul (void ((a float*) (b float*) (c float*) (n int)))
  (let ((row (+ (* block-idx-y block-dim-y) thread-idx-y))
        (col (+ (* block-idx-x block-dim-x) thread-idx-x))
        (sum 0.0))
    (when (and (< row n) (< col n))
      (for (k 0 (< k n) (+ k 1))
        (set sum (+ sum (* (aref a (+ (* row n) k)) (aref b (+ (* k n) col))))))
      (set (aref c (+ (* row n) col)) sum))))

;; half2 vectors: construction, component-wise arithmetic, components.
(defkernel half2-math (void ((a half2*) (out half2*) (lo half*)))
  (let* ((tx thread-idx-x)
         (v (aref a tx))
         (w (half2 (half 1.0) (half 2.0))))
    (set (aref out tx) (* (+ v w) v))
    (set (aref lo tx) (half2-y (aref out tx)))))

;; fma, __saturate, __divide, double-to-int-rn.
(defkernel special (void ((x float*) (dx double*) (out float*) (rn int*)))
  (let* ((tx thread-idx-x)
         (v (aref x tx)))
    (set (aref out (* 3 tx)) (fma v 3.0 0.25))
    (set (aref out (+ (* 3 tx) 1)) (__saturate v))
    (set (aref out (+ (* 3 tx) 2)) (__divide v 4.0))
    (set (aref rn tx) (double-to-int-rn (aref dx tx)))))

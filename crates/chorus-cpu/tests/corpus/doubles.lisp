;; double arithmetic, double3 and double4 vectors.
(defkernel doubles (void ((x double*) (v double4*) (out double*)))
  (let* ((tx thread-idx-x)
         (a (aref x tx))
         (p (double3 a (* 2.0d0 a) 1.0d0))
         (q (aref v tx)))
    (set (aref out (* 3 tx)) (/ (+ (* a a) 1.0d0) 3.0d0))
    (set (aref out (+ (* 3 tx) 1)) (dot p p))
    (set (aref out (+ (* 3 tx) 2)) (dot (- q) (* q 0.5d0)))))

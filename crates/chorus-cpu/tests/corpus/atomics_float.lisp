;; Floating atomics: float, double and half add, float exchange.
(defkernel float-atomics (void ((f float*) (d double*) (h half*) (xs float*)))
  (let ((tx (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (atomic-add (pointer (aref f 0)) (float (mod tx 10)))
    (atomic-add (pointer (aref d 0)) (* 0.5d0 tx))
    (atomic-add (pointer (aref h 0)) (half 1.0))
    (set (aref xs tx) (atomic-exch (pointer (aref f 1)) (float tx)))))

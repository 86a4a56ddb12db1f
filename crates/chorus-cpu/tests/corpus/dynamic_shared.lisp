;; Dynamic shared memory: reverse each block's slice; two views alias one base.
(defkernel reverse (void ((a int*) (out int*)))
  (declare (launch-bounds 64))
  (with-dynamic-shared-memory ((s int) (bytes uint8))
    (let ((tx thread-idx-x)
          (base (* block-idx-x block-dim-x)))
      (set (aref s tx) (aref a (+ base tx)))
      (syncthreads)
      (set (aref out (+ base tx)) (+ (aref s (- block-dim-x tx 1)) (* 1000 (aref bytes (* 4 tx))))))))

;; cuRAND XORWOW normals (float and double) and double uniforms, per-thread subsequences.
(defkernel normals (void ((states curand-state-xorwow*) (f float*) (d double*) (u double*)))
  (let ((tx (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (curand-init-xorwow 42 tx 0 (pointer (aref states tx)))
    (set (aref f (* 2 tx)) (curand-normal-float-xorwow (pointer (aref states tx))))
    (set (aref f (+ (* 2 tx) 1)) (curand-normal-float-xorwow (pointer (aref states tx))))
    (set (aref d tx) (curand-normal-double-xorwow (pointer (aref states tx))))
    (set (aref u tx) (curand-uniform-double-xorwow (pointer (aref states tx))))))

;; cuRAND XORWOW: subsequence 0, offset 4·thread, four uniforms each.
(defkernel uniforms (void ((states curand-state-xorwow*) (out float*)))
  (let ((tx thread-idx-x))
    (curand-init-xorwow 1234 0 (* 4 tx) (pointer (aref states tx)))
    (for (k 0 (< k 4) (+ k 1))
      (set (aref out (+ (* 4 tx) k)) (curand-uniform-float-xorwow (pointer (aref states tx)))))))

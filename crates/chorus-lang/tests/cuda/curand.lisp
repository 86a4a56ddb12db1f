;; cuRAND XORWOW.
(defkernel random-numbers (void ((states curand-state-xorwow*) (f float*) (d double*)))
  (let ((i thread-idx-x))
    (curand-init-xorwow 1234 i 0 (pointer (aref states i)))
    (set (aref f i) (+ (curand-uniform-float-xorwow (pointer (aref states i)))
                       (curand-normal-float-xorwow (pointer (aref states i)))))
    (set (aref d i) (+ (curand-uniform-double-xorwow (pointer (aref states i)))
                       (curand-normal-double-xorwow (pointer (aref states i)))))))

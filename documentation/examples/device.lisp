;; A device function with a value, a void device function, and a kernel with launch bounds.
(defkernel square (float ((x float)))
  (return (* x x)))

(defkernel (store-square :device) (void ((out float*) (i int) (x float)))
  (set (aref out i) (square x)))

(defkernel squares (void ((out float*) (xs float* :restrict) (n int)))
  (declare (launch-bounds 256))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (when (< i n)
      (store-square out i (aref xs i)))))

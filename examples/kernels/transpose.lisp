;;;; out = inᵀ for a height×width row-major matrix of floats, through a 32×33 shared tile: the
;;;; extra column of padding puts the 32 elements of a tile column in 32 different banks, so the
;;;; column reads of the second phase are conflict-free. Block 32×8; each thread moves 4 elements
;;;; (the unroll macro writes the four copies).

(defkernel transpose (void ((in float* :restrict) (out float* :restrict) (width int) (height int)))
  (declare (launch-bounds 256))
  (with-shared-memory ((tile float 32 33))
    (let ((x (+ (* block-idx-x 32) thread-idx-x))
          (y (+ (* block-idx-y 32) thread-idx-y)))
      (unroll (j 0 8 32)
        (when (and (< x width) (< (+ y j) height))
          (set (aref tile (+ thread-idx-y j) thread-idx-x)
               (aref in (+ (* (+ y j) width) x))))))
    (syncthreads)
    (let ((x (+ (* block-idx-y 32) thread-idx-x))
          (y (+ (* block-idx-x 32) thread-idx-y)))
      (unroll (j 0 8 32)
        (when (and (< x height) (< (+ y j) width))
          (set (aref out (+ (* (+ y j) height) x))
               (aref tile thread-idx-x (+ thread-idx-y j))))))))

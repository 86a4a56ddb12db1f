;; Found by chorus-fuzz (seed 3, target CudaPrinter with CHORUS_FUZZ_NVCC=10): the checker types
;; thread-idx-x as int and accepts the label -1, but the printer writes `switch (threadIdx.x)`,
;; an unsigned int in C, and nvcc refuses `case -1:` ("invalid narrowing conversion from int to
;; unsigned int: constant value does not fit in destination type").
(defkernel k (void ((out int*)))
  (switch thread-idx-x
    (-1 (set (aref out 0) 1))
    (t (set (aref out 0) 2))))

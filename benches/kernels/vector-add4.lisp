;;;; Vector add for the benchmark: c = a + b over float4 (16-byte loads and stores), one float4
;;;; per thread. The seed's vector-add (examples/vector-add.rs) does one float per thread.

(defkernel vec-add4 (void ((a float4* :restrict) (b float4* :restrict) (c float4* :restrict) (n4 int)))
  (declare (launch-bounds 256))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (when (< i n4)
      (set (aref c i) (+ (aref a i) (aref b i))))))

;;; An empty kernel with the arguments of vec-add: what a launch costs on the host.
(defkernel empty (void ((a float*) (b float*) (c float*) (n int))))

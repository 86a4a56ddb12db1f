;;;; C = A·B in FP32 on the CUDA cores. A comes transposed (Aᵀ is K×M row-major) so that both
;;;; operand tiles load as rows of float4; B is K×N and C is M×N, row-major, all as float4 arrays.
;;;; Block tile 128×128, k-step 8, 256 threads, each owning an 8×8 register tile held in sixteen
;;;; float4 accumulators: rows {4ty+i, 64+4ty+i} and columns {4tx+j, 64+4tx+j}, so that the float4
;;;; reads of the shared tiles are conflict-free (a quarter-warp reads 128 consecutive bytes). The
;;;; next k-step's global loads are issued into registers before the current step's arithmetic.
;;;; The macros below write out the 8 k-steps × 8 rows × 2 float4 multiply-adds: 512 FMAs per tile,
;;;; straight-line, with every accumulator a named register.
;;;; M and N must be multiples of 128, K a multiple of 8.

;;; (with-zero-float4s (a b …) body…): binds each name to a zero float4 around body.
(defkernelmacro with-zero-float4s ((&rest names) &body body)
  (if names
      `(let ((,(car names) (float4 0.0 0.0 0.0 0.0)))
         (with-zero-float4s ,(cdr names) ,@body))
      `(progn ,@body)))

;;; One row of the register tile: left += a·b-left, right += a·b-right.
(defkernelmacro fma-row (left right a b-left b-right)
  `(progn
     (inc ,left (* ,a ,b-left))
     (inc ,right (* ,a ,b-right))))

;;; Stores one row of the register tile: `row` is the row within the block tile.
(defkernelmacro store-row (left right row)
  (let ((base (gensym)))
    `(let ((,base (+ (* (+ (* block-idx-y 128) ,row) n4) (* block-idx-x 32) tx)))
       (set (aref c ,base) ,left)
       (set (aref c (+ ,base 16)) ,right))))

(defkernel sgemm-tn (void ((at float4* :restrict) (b float4* :restrict) (c float4* :restrict)
                           (m int) (n int) (k int)))
  (declare (launch-bounds 256 2))
  (with-shared-memory ((as float4 8 32)
                       (bs float4 8 32))
    (let* ((tid thread-idx-x)
           (tx (mod tid 16))
           (ty (/ tid 16))
           (lk (/ tid 32))
           (lc (mod tid 32))
           (m4 (/ m 4))
           (n4 (/ n 4))
           (a-base (+ (* lk m4) (* block-idx-y 32) lc))
           (b-base (+ (* lk n4) (* block-idx-x 32) lc))
           (pa (aref at a-base))
           (pb (aref b b-base)))
      (set (aref as lk lc) pa)
      (set (aref bs lk lc) pb)
      (syncthreads)
      (with-zero-float4s (c0l c0r c1l c1r c2l c2r c3l c3r c4l c4r c5l c5r c6l c6r c7l c7r)
        (for (k0 0 (< k0 k) (+ k0 8))
          (let ((more (< (+ k0 8) k)))
            (when more
              (set pa (aref at (+ a-base (* (+ k0 8) m4))))
              (set pb (aref b (+ b-base (* (+ k0 8) n4)))))
            (unroll (kk 0 1 8)
              (let ((a0 (aref as kk ty))
                    (a1 (aref as kk (+ ty 16)))
                    (b0 (aref bs kk tx))
                    (b1 (aref bs kk (+ tx 16))))
                (fma-row c0l c0r (float4-x a0) b0 b1)
                (fma-row c1l c1r (float4-y a0) b0 b1)
                (fma-row c2l c2r (float4-z a0) b0 b1)
                (fma-row c3l c3r (float4-w a0) b0 b1)
                (fma-row c4l c4r (float4-x a1) b0 b1)
                (fma-row c5l c5r (float4-y a1) b0 b1)
                (fma-row c6l c6r (float4-z a1) b0 b1)
                (fma-row c7l c7r (float4-w a1) b0 b1)))
            (syncthreads)
            (when more
              (set (aref as lk lc) pa)
              (set (aref bs lk lc) pb))
            (syncthreads)))
        (store-row c0l c0r (+ (* ty 4) 0))
        (store-row c1l c1r (+ (* ty 4) 1))
        (store-row c2l c2r (+ (* ty 4) 2))
        (store-row c3l c3r (+ (* ty 4) 3))
        (store-row c4l c4r (+ 64 (* ty 4) 0))
        (store-row c5l c5r (+ 64 (* ty 4) 1))
        (store-row c6l c6r (+ 64 (* ty 4) 2))
        (store-row c7l c7r (+ 64 (* ty 4) 3))))))

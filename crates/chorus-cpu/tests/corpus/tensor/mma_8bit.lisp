;; mma.sync m16n8k32 on 8-bit inputs: fp8 (E4M3, E5M2) with f32 accumulators, and 8-bit
;; integers (s8, u8) with s32 accumulators. A is 16×32 bytes row-major (8 words a row), B is
;; given transposed (8 rows of 32 bytes): the words each lane reads are those of m16n8k16's
;; 16-bit layout, four elements a word.

(defkernelmacro frag-a (a)
  `(uint4 (aref ,a (+ (* g 8) q)) (aref ,a (+ (* (+ g 8) 8) q))
          (aref ,a (+ (* g 8) q 4)) (aref ,a (+ (* (+ g 8) 8) q 4))))

(defkernelmacro frag-b (bt)
  `(uint2 (aref ,bt (+ (* g 8) q)) (aref ,bt (+ (* g 8) q 4))))

(defkernelmacro mma-kernel (name type acc-type vec)
  (let ((x (intern (format nil "~a-x" vec)))
        (y (intern (format nil "~a-y" vec)))
        (z (intern (format nil "~a-z" vec)))
        (w (intern (format nil "~a-w" vec)))
        (ptr (intern (format nil "~a*" acc-type))))
    `(defkernel ,name (void ((a uint*) (bt uint*) (c ,ptr) (d ,ptr)))
       (let* ((g (/ thread-idx-x 4))
              (q (mod thread-idx-x 4))
              (r0 (+ (* g 8) (* 2 q)))
              (r8 (+ (* (+ g 8) 8) (* 2 q)))
              (r (mma-sync :m16n8k32 ,type (frag-a a) (frag-b bt)
                           (,vec (aref c r0) (aref c (+ r0 1)) (aref c r8) (aref c (+ r8 1))))))
         (set (aref d r0) (,x r))
         (set (aref d (+ r0 1)) (,y r))
         (set (aref d r8) (,z r))
         (set (aref d (+ r8 1)) (,w r))))))

(mma-kernel mma-e4m3 :e4m3 float float4)
(mma-kernel mma-e5m2 :e5m2 float float4)
(mma-kernel mma-s8 :s8 int int4)
(mma-kernel mma-u8 :u8 int int4)

;; mma.sync on 16-bit inputs (f16, bf16) with f32 accumulators: one warp multiplies a 16×16
;; A (row-major) by a 16×8 B (given transposed: 8 rows of K) and adds a 16×8 C, per PTX's
;; fragment layout (g = lane / 4, q = lane % 4). Words are pairs of 16-bit elements.

(defkernelmacro load-a16 (a)
  ;; m16n8k16 A: rows g and g+8, words q and q+4 of each 8-word row.
  `(uint4 (aref ,a (+ (* g 8) q)) (aref ,a (+ (* (+ g 8) 8) q))
          (aref ,a (+ (* g 8) q 4)) (aref ,a (+ (* (+ g 8) 8) q 4))))

(defkernelmacro load-c (c)
  `(float4 (aref ,c (+ (* g 8) (* 2 q))) (aref ,c (+ (* g 8) (* 2 q) 1))
           (aref ,c (+ (* (+ g 8) 8) (* 2 q))) (aref ,c (+ (* (+ g 8) 8) (* 2 q) 1))))

(defkernelmacro store-d (d v)
  `(progn
     (set (aref ,d (+ (* g 8) (* 2 q))) (float4-x ,v))
     (set (aref ,d (+ (* g 8) (* 2 q) 1)) (float4-y ,v))
     (set (aref ,d (+ (* (+ g 8) 8) (* 2 q))) (float4-z ,v))
     (set (aref ,d (+ (* (+ g 8) 8) (* 2 q) 1)) (float4-w ,v))))

(defkernelmacro with-lane (&body body)
  `(let ((g (/ thread-idx-x 4))
         (q (mod thread-idx-x 4)))
     ,@body))

(defkernel mma-bf16-k16 (void ((a uint*) (bt uint*) (c float*) (d float*)))
  (with-lane
    (let ((fb (uint2 (aref bt (+ (* g 8) q)) (aref bt (+ (* g 8) q 4)))))
      (store-d d (mma-sync :m16n8k16 :bf16 (load-a16 a) fb (load-c c))))))

(defkernel mma-f16-k16 (void ((a uint*) (bt uint*) (c float*) (d float*)))
  (with-lane
    (let ((fb (uint2 (aref bt (+ (* g 8) q)) (aref bt (+ (* g 8) q 4)))))
      (store-d d (mma-sync :m16n8k16 :f16 (load-a16 a) fb (load-c c))))))

;; m16n8k8: A is 16×8 (4 words a row), B 8×8 (given transposed: 4 words a row).
(defkernel mma-bf16-k8 (void ((a uint*) (bt uint*) (c float*) (d float*)))
  (with-lane
    (let ((fa (uint2 (aref a (+ (* g 4) q)) (aref a (+ (* (+ g 8) 4) q)))))
      (store-d d (mma-sync :m16n8k8 :bf16 fa (aref bt (+ (* g 4) q)) (load-c c))))))

(defkernel mma-f16-k8 (void ((a uint*) (bt uint*) (c float*) (d float*)))
  (with-lane
    (let ((fa (uint2 (aref a (+ (* g 4) q)) (aref a (+ (* (+ g 8) 4) q)))))
      (store-d d (mma-sync :m16n8k8 :f16 fa (aref bt (+ (* g 4) q)) (load-c c))))))

;; The sum of a vector: each block reduces its elements with warp shuffles and shared memory,
;; and writes one partial sum.
(defkernel block-sum (void ((xs float*) (partial float*) (n int)))
  (with-shared-memory ((warp-sums float 32))
    (let* ((i (+ (* block-idx-x block-dim-x) thread-idx-x))
           (v (if (< i n) (aref xs i) 0.0)))
      ;; Within each warp: after five shuffles, lane 0 holds the warp's sum.
      (do ((offset 16 (shr offset 1)))
          ((= offset 0))
        (set v (+ v (shfl-down-sync (uint -1) v offset))))
      (when (= lane-id 0)
        (set (aref warp-sums (/ thread-idx-x 32)) v))
      (syncthreads)
      ;; Thread 0 adds the warps' sums.
      (when (= thread-idx-x 0)
        (let ((total 0.0))
          (do ((w 0 (+ w 1)))
              ((>= w (/ block-dim-x 32)))
            (set total (+ total (aref warp-sums w))))
          (set (aref partial block-idx-x) total))))))

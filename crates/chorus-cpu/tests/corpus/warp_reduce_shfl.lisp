;; Warp reduction with shfl-down-sync; lane 0 of each warp writes the warp's sum.
(defkernel warp-sum (void ((in int*) (out int*)))
  (let* ((i (+ (* block-idx-x block-dim-x) thread-idx-x))
         (v (aref in i)))
    (do ((offset 16 (/ offset 2))) ((= offset 0))
      (set v (+ v (shfl-down-sync (uint -1) v offset))))
    (if (= lane-id 0)
        (set (aref out (/ i warp-size)) v))))

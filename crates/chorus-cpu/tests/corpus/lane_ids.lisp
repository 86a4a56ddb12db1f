;; lane-id and warp-size in a 2-D block (warps follow the linear thread index).
(defkernel lanes (void ((out int*)))
  (let ((linear (+ thread-idx-x (* block-dim-x thread-idx-y))))
    (set (aref out linear) (+ lane-id (* 100 (/ linear warp-size)) (* 10000 warp-size)))))

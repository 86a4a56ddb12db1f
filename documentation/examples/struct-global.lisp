;; defkernel-struct and defglobal with qualifiers.
(defkernel-struct pair
  (x int)
  (y int))

(defglobal counter 0)
(defglobal scale 2.5 :constant)
(defglobal origin (float3 1.0 2.0 3.0) (:device :constant))

(defkernel swap-pair (pair ((p pair)))
  (return (make-pair (pair-y p) (pair-x p))))

(defkernel swap-all (void ((ps pair*) (out float*) (n int)))
  (let ((i thread-idx-x))
    (when (< i n)
      (set (aref ps i) (swap-pair (aref ps i)))
      (set (aref out i) (* scale (float3-x origin)))
      (atomic-add (pointer counter) 1))))

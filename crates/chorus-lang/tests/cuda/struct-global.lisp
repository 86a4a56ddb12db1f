;; defkernel-struct, defglobal with each qualifier, and :restrict arguments.
(defkernel-struct pair
  (x int)
  (y int))

(defkernel-struct particle
  (position float4)
  (weight pair))

(defglobal foo 0)
(defglobal bar 2.5 :constant)
(defglobal origin (float3 1.0 2.0 3.0) (:device :constant))
(defglobal counter 0u :managed)

(defkernel swap-pair (pair ((p pair)))
  (return (make-pair (pair-y p) (pair-x p))))

(defkernel store (void ((x int* :restrict) (ps pair*) (q particle*)))
  (set (aref x 0) (+ foo 1))
  (set (pair-x (aref ps 0)) (pair-y (swap-pair (aref ps 1))))
  (set (float4-w (particle-position (aref q 0))) (+ bar (float3-x origin)))
  (set foo (aref x 1)))

;; Structures: arrays of structures, by-value parameters, nested fields, constructors.
(defkernel-struct pair (x int) (y float))
(defkernel-struct body (id uint8) (pos float3) (p pair) (mass double))

(defkernel (sum-pair :device) (float ((p pair)))
  (return (+ (float (pair-x p)) (pair-y p))))

(defkernel structs (void ((bodies body*) (q pair) (out float*) (pairs pair*)))
  (let* ((tx thread-idx-x)
         (b (aref bodies tx)))
    (set (aref out tx) (+ (float3-x (body-pos b)) (float3-z (body-pos b))
                         (sum-pair (body-p b)) (float (body-mass b)) (float (body-id b))))
    (set (body-mass (aref bodies tx)) (* 2.0d0 (body-mass b)))
    (set (pair-x (body-p (aref bodies tx))) (+ (pair-x q) tx))
    (set (aref pairs tx) (make-pair (* tx 3) (* (pair-y q) tx)))))

;; set on variables, vector components and array elements; progn; return with and without a
;; value; calls of device functions as statements.
(defkernel do-some-statements (int ())
  (return 0))

(defkernel do-more-statements (int ())
  (return 1))

(defkernel assignments (void ((z double*) (v float4*)))
  (let ((x 0.0d0)
        (y (aref v 0)))
    (set x 1.0d0)
    (set (float4-x y) 1.0)
    (set (aref z 0) x)
    (set (aref v 1) y)
    (progn
      (do-some-statements)
      (do-more-statements))
    (return)))

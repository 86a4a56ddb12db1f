;; Addresses: (pointer (aref …)) into device functions, and the address of a local.
(defkernel (bump :device) (void ((p int*)))
  (set (aref p 0) (+ (aref p 0) 1))
  (set (aref p 1) (+ (aref p 1) 10)))

(defkernel (sum-into :device) (void ((acc float*) (x float)))
  (set (aref acc 0) (+ (aref acc 0) x)))

(defkernel pointers (void ((a int*) (out float*)))
  (let ((tx thread-idx-x)
        (acc 0.0))
    (bump (pointer (aref a (* 2 tx))))
    (for (i 0 (< i 4) (+ i 1))
      (sum-into (pointer acc) (float (* i tx))))
    (set (aref out tx) acc)))

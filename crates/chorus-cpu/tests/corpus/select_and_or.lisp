;; Inline if and short-circuit and/or guarding out-of-range reads.
(defkernel guarded (void ((a int*) (n int) (out int*)))
  (let ((i thread-idx-x))
    (set (aref out (* 3 i)) (if (< i n) (aref a i) -1))
    (set (aref out (+ (* 3 i) 1)) (if (and (< i n) (> (aref a i) 10)) 1 0))
    (set (aref out (+ (* 3 i) 2)) (if (or (>= i n) (= (aref a i) 0) (< (aref a i) 5)) 7 8))))

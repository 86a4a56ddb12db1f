;; Shuffles of float, double and int64 values (64-bit values move whole).
(defkernel shuffle-wide (void ((f float*) (d double*) (l int64*)))
  (let ((lane thread-idx-x))
    (set (aref f lane) (shfl-xor-sync (uint -1) (* 1.5 lane) 1))
    (set (aref d lane) (shfl-sync (uint -1) (* 0.25d0 lane) 31))
    (set (aref l lane) (shfl-down-sync (uint -1) (* (int64 1000000000000) lane) 1))))

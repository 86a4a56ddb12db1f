(defkernel k (void ((xs int*)))
  (set (aref xs 0) 1/2))

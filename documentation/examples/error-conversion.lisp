(defkernel halve (void ((xs int*) (n int)))
  (let ((i thread-idx-x))
    (when (< i n)
      (set (aref xs i) (/ (aref xs i) 2.0)))))

(defkernelmacro inc (place &optional (delta 1))
  `(set ,place (+ ,place ,delta)))

(defkernel count-up (void ((a int*)))
  (when (< thread-idx-x 4)
    (inc (aref a thread-idx-x))))

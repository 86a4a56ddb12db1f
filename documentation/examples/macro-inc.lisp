;; A kernel macro with an optional parameter, and a symbol macro.
(defkernelmacro inc (place &optional (by 1))
  `(set ,place (+ ,place ,by)))

(defkernel-symbol-macro global-id (+ (* block-idx-x block-dim-x) thread-idx-x))

(defkernel count-up (void ((a int*) (n int)))
  (let ((i global-id))
    (when (< i n)
      (inc (aref a i))
      (inc (aref a i) 10))))

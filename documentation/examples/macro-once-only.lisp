;; once-only: the argument is evaluated once; with-gensyms: a fresh variable.
(defkernelmacro store-square (place x)
  (alexandria:once-only (x)
    `(set ,place (* ,x ,x))))

(defkernelmacro do-range ((var from to) &body body)
  (alexandria:with-gensyms (limit)
    `(let ((,limit ,to))
       (do ((,var ,from (+ ,var 1)))
           ((> ,var ,limit))
         ,@body))))

(defkernel squares (void ((a float*) (n int)))
  (do-range (i 0 (- n 1))
    (store-square (aref a i) (aref a i))))

(defkernelmacro swap (a b)
  (alexandria:with-gensyms (tmp)
    `(let ((,tmp ,a))
       (set ,a ,b)
       (set ,b ,tmp))))

(defkernel k (void ((xs int*)))
  (swap (aref xs 0)))

;; A macro whose expansion binds gensyms; `g1` is also a name of the program, so the printed
;; gensym must take another name.
(defkernelmacro swap (a b)
  (let ((tmp (gensym)))
    `(let ((,tmp ,a))
       (set ,a ,b)
       (set ,b ,tmp))))

(defkernel swap-pairs (void ((x int*) (g1 int)))
  (swap (aref x 0) (aref x 1))
  (swap (aref x 2) (aref x g1)))

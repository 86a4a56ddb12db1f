;; Found by chorus-fuzz (seed 3, target Cpu, from a mutated examples/kernels/sgemm.lisp): a macro
;; that expands into three calls of itself. The expander stops at MAX_EXPANSIONS (100 000) with a
;; located error, but by then it holds 100 000 copies of the body: hundreds of MB for a few KB.
(defkernelmacro tri ((&rest names) &body body)
  (if names
      `(let ((,(car names) 0))
         (tri ,(cdr names) ,@body) (tri ,(cdr names) ,@body) (tri ,(cdr names) ,@body))
      `(progn ,@body)))

(defkernel k (void ((out float*) (n int)))
  (tri (a b c d e f g h i j k l m n o p)
    (for (i 0 (< i n) (+ i 1))
      (set (aref out i) (+ (aref out i) (* 2.0 (aref out (+ i 1))) (* 3.0 (aref out (+ i 2)))
                           (* 4.0 (aref out (+ i 3))) (* 5.0 (aref out (+ i 4)))
                           (* 6.0 (aref out (+ i 5))) (* 7.0 (aref out (+ i 6))))))))

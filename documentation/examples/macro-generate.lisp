;; Macros that compute: one kernel per type, and a loop unrolled at expansion time.
(defkernelmacro define-scale-kernels (&rest types)
  `(progn
     ,@(mapcar (lambda (type)
                 `(defkernel ,(symbolicate 'scale- type)
                      (void ((xs ,(symbolicate type '*)) (k ,type) (n int)))
                    (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
                      (when (< i n)
                        (set (aref xs i) (* k (aref xs i)))))))
               types)))

(defkernelmacro unrolled-sum (array count)
  (check-type count integer)
  `(+ ,@(loop for i from 0 below count
              collect `(aref ,array ,i))))

(define-scale-kernels float double int)

(defkernel sum4 (void ((xs float*) (out float*)))
  (set (aref out 0) (unrolled-sum xs 4)))

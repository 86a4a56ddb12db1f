;; C names: punctuation, reserved words, collisions, shadowing and gensyms.
(defglobal a-b 1)
(defglobal a_b 2)

(defkernelmacro with-temp ((var init) &body body)
  (let ((g (gensym "tmp")))
    `(let ((,g ,init))
       (symbol-macrolet ((,var ,g))
         ,@body))))

(defkernel %scale* (void ((int int*) (x float)))
  (let ((x (* x 2.0)))
    (let ((x (+ x 1.0)))
      (with-temp (t0 (+ a-b a_b))
        (set (aref int 0) (+ t0 (floor x)))))))

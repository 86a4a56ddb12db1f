;; Kernel macros, symbol macros, macrolet and symbol-macrolet in a kernel.
(defkernelmacro inc (place delta)
  `(set ,place (+ ,place ,delta)))

(defkernel-symbol-macro tid thread-idx-x)

(defkernel macros (void ((out int*)))
  (let ((acc 0))
    (macrolet ((twice (x) `(* 2 ,x)))
      (symbol-macrolet ((ten 10))
        (inc acc (twice tid))
        (inc acc ten)))
    (when (> tid 3)
      (inc acc 1000))
    (unless (> tid 3)
      (inc acc 500))
    (set (aref out tid) acc)))

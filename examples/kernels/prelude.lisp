;;;; Kernel macros shared by the examples. Each example's kernel text is this prelude followed by
;;;; its own file (the examples concatenate them), so the macros below expand at compile time into
;;;; straight-line code: the unrolled loops an expert writes by hand in CUDA C.

;;; The full warp mask of the *-sync warp functions.
(defkernel-symbol-macro full-mask (uint -1))

;;; (unroll (var from step below) body…) repeats body with var bound, as a literal, to
;;; from, from+step, … while it stays below `below`: a loop unrolled at expansion time.
(defkernelmacro unroll ((var from step below) &body body)
  (if (< from below)
      `(progn
         (symbol-macrolet ((,var ,from)) ,@body)
         (unroll (,var ,(+ from step) ,step ,below) ,@body))
      '(progn)))

;;; (inc place value): place += value.
(defkernelmacro inc (place value)
  `(set ,place (+ ,place ,value)))

;;; (warp-sum-down var 16 8 4 2 1): after it, lane 0 holds the sum of var over the warp.
(defkernelmacro warp-sum-down (var &rest offsets)
  (if offsets
      `(progn
         (inc ,var (shfl-down-sync full-mask ,var ,(car offsets)))
         (warp-sum-down ,var ,@(cdr offsets)))
      '(progn)))

;;; (warp-scan-up var lane 1 2 4 8 16): inclusive prefix sum of var over the lanes.
(defkernelmacro warp-scan-up (var lane &rest offsets)
  (if offsets
      (let ((u (gensym)))
        `(progn
           (let ((,u (shfl-up-sync full-mask ,var ,(car offsets))))
             (when (>= ,lane ,(car offsets))
               (inc ,var ,u)))
           (warp-scan-up ,var ,lane ,@(cdr offsets))))
      '(progn)))

;;; (float4-sum v): the four components of v added pairwise.
(defkernelmacro float4-sum (v)
  `(+ (+ (float4-x ,v) (float4-y ,v)) (+ (float4-z ,v) (float4-w ,v))))

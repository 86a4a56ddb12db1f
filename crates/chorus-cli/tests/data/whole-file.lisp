;;; A CL-Cuda style source file: host code around one kernel.
(in-package :cl-user)
(defpackage #:whole-file (:use :cl :cl-cuda))
(in-package :whole-file)

(defvar *n* 1024)
(defun init (a) (fill a #\Space))

(cl-cuda:defkernel twice (void ((a cl-cuda:float*) (n cl-cuda:int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (when (< i n)
      (set (aref a i) (* 2.0 (aref a i))))))

(defmacro host-only (x) `(setf *n* ,(host-function x)))
(host-only 2)

(defun main () (twice a *n* :grid-dim '(4 1 1) :block-dim '(256 1 1)))

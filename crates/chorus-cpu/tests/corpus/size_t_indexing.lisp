;; size-t and uint64 arithmetic for indexing and wrap-around.
(defkernel wide (void ((out uint64*) (n size-t)))
  (let* ((tx (size-t thread-idx-x))
         (i (+ (* n (size-t 2)) tx)))
    (set (aref out tx) (+ i (shl (uint64 1) (+ (int tx) 32))))
    (set (aref out (+ tx (size-t 32))) (- (uint64 tx) (uint64 1)))))

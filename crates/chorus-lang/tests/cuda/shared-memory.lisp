;; with-shared-memory: scalar, one and two dimensions, a computed size; syncthreads.
(defkernel stencil (void ((f float*) (out float*)))
  (with-shared-memory ((count int)
                       (a int 16)
                       (fs float (+ 16 2) (+ 16 2)))
    (set (aref a thread-idx-x) thread-idx-x)
    (set (aref fs thread-idx-y (+ thread-idx-x 1)) (aref f thread-idx-x))
    (syncthreads)
    (set (aref out thread-idx-x) (aref fs thread-idx-y thread-idx-x))))

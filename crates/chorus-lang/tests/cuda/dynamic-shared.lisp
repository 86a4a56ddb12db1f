;; The seed's dynamic shared memory example, with launch bounds.
(defkernel fill (void ((a int*)))
  (declare (launch-bounds 32))
  (with-dynamic-shared-memory ((s int))
    (set (aref s thread-idx-x) thread-idx-x)
    (syncthreads)
    (set (aref a thread-idx-x) (aref s thread-idx-x))))

(defkernel fill-bounded (void ((a float*)))
  (declare (launch-bounds 256 2))
  (with-dynamic-shared-memory ((s float) (u int))
    (set (aref s thread-idx-x) 1.0)
    (set (aref a thread-idx-x) (+ (aref s thread-idx-x) (aref u 0)))))

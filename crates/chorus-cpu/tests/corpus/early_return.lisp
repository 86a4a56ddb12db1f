;; return from the kernel and from a device function inside a loop.
(defkernel first-multiple (int ((start int) (k int)))
  (do ((i start (+ i 1))) ((> i 1000))
    (if (= (mod i k) 0)
        (return i)))
  (return -1))

(defkernel early (void ((out int*) (n int)))
  (let ((tx thread-idx-x))
    (if (>= tx n)
        (return))
    (set (aref out tx) (first-multiple (* tx 10) (+ (mod tx 7) 3)))))

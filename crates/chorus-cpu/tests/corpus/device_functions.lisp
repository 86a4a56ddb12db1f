;; Device functions: a value function, a void function writing through a pointer, recursion.
(defkernel square (int ((x int)))
  (return (* x x)))

(defkernel (store-twice :device) (void ((p int*) (v int)))
  (set (aref p 0) v)
  (set (aref p 1) (* 2 v)))

(defkernel factorial (int64 ((n int)))
  (if (<= n 1)
      (return (int64 1))
      (return (* (int64 n) (factorial (- n 1))))))

(defkernel fib (int ((n int)))
  (if (< n 2)
      (return n))
  (return (+ (fib (- n 1)) (fib (- n 2)))))

(defkernel use-functions (void ((out int*) (big int64*)))
  (let ((tx thread-idx-x))
    (store-twice (pointer (aref out (* 4 tx))) (square tx))
    (set (aref out (+ (* 4 tx) 2)) (fib (mod tx 12)))
    (set (aref out (+ (* 4 tx) 3)) (square (square tx)))
    (set (aref big tx) (factorial (+ (mod tx 20) 1)))))

;; int8, uint16 and int16 arithmetic with wrap-around, stored in their own arrays.
(defkernel small-ints (void ((a int8*) (b uint16*) (c int16*)))
  (let ((tx thread-idx-x))
    (set (aref a tx) (* (aref a tx) (int8 3)))
    (set (aref b tx) (- (aref b tx) (uint16 1000)))
    (set (aref c tx) (+ (aref c tx) (int16 30000)))))

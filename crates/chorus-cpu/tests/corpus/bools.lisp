;; bool values in memory and as parameters.
(defkernel bools (void ((flags bool*) (invert bool) (count int*)))
  (let ((tx thread-idx-x))
    (set (aref flags tx) (if invert (not (aref flags tx)) (aref flags tx)))
    (if (aref flags tx)
        (atomic-add count 1))))

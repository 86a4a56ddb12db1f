;; A histogram with atomic-add from many blocks.
(defkernel histogram (void ((data int*) (n int) (bins uint*)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (atomic-add (pointer (aref bins (aref data i))) (uint 1)))))

;; match-any-sync and match-all-sync.
(defkernel matches (void ((out uint*) (preds int*)))
  (let* ((tx thread-idx-x)
         (key (mod (/ tx 4) 3)))
    (set (aref out tx) (match-any-sync (uint -1) key))
    (set (aref out (+ 32 tx)) (match-all-sync (uint -1) 7 (pointer (aref preds tx))))
    (set (aref out (+ 64 tx)) (match-all-sync (uint -1) key (pointer (aref preds (+ 32 tx)))))))

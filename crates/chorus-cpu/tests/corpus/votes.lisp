;; ballot, all and any over the whole warp and inside a divergent branch; activemask.
(defkernel votes (void ((out uint*)))
  (let ((tx thread-idx-x)
        (w (* 6 (/ thread-idx-x 32))))
    (set (aref out w) (ballot-sync (uint -1) (= (mod tx 3) 0)))
    (set (aref out (+ w 1)) (uint (all-sync (uint -1) (< tx 1000))))
    (set (aref out (+ w 2)) (uint (any-sync (uint -1) (= tx 1000))))
    (set (aref out (+ w 3)) (uint (any-sync (uint -1) (= (mod tx 32) 31))))
    (if (< (mod tx 32) 10)
        (progn
          (set (aref out (+ w 4)) (activemask))
          (set (aref out (+ w 5)) (ballot-sync (activemask) (= (mod tx 2) 1)))))))

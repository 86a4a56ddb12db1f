;; switch with a default clause; no fall-through.
(defkernel choose (void ((a int*) (b int*)))
  (switch (aref a 0)
    (1 (set (aref b 0) 10))
    (2 (set (aref b 0) 20)
       (set (aref b 1) 21))
    (t (set (aref b 0) 30))))

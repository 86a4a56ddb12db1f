(defkernel count-hits (void ((hits float*) (i int)))
  (atomic-inc (pointer (aref hits i)) 1))

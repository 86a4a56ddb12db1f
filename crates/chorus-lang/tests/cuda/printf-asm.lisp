;; printf (float arguments promoted to double) and cuda-asm.
(defkernel report (void ((out int*)))
  (printf "chorus %d\n" 1)
  (printf "thread %d of %d: \"%f\"\n" thread-idx-x block-dim-x 2.5)
  (let ((x 0))
    (cuda-asm "asm volatile(\"mov.s32 %0, 7;\" : \"=r\"(x));")
    (set (aref out 0) x)))

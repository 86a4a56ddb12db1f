;; pack-bf16x2 and pack-f16x2: pairs of floats rounded to nearest even (ties, overflow to
;; infinity, bfloat16's and half's subnormals, signed zero) and packed, the first operand in
;; the low 16 bits, as cvt.rn.bf16x2.f32 and cvt.rn.f16x2.f32 do.
(defkernel pack (void ((x float*) (out uint*)))
  (let* ((i thread-idx-x)
         (lo (aref x (* 2 i)))
         (hi (aref x (+ (* 2 i) 1))))
    (set (aref out (* 2 i)) (pack-bf16x2 lo hi))
    (set (aref out (+ (* 2 i) 1)) (pack-f16x2 lo hi))))

;;;; hgemm: C = A·B with BF16 inputs, f32 accumulation and a BF16 result, on the tensor cores
;;;; through mma.sync m16n8k16 (sm_80 and newer), written with the tensor-core macro library
;;;; (`chorus_lang::library::TENSOR_CORE`, the `tc-` macros). A is M×K, B is K×N, C is M×N,
;;;; all row-major. Block tile 128×128×32, four warps in 2×2, each a 64×64 warp tile of 4×8
;;;; float4 accumulators; a 3-stage cp.async pipeline (3 × 16 KiB: the 48 KiB of static shared
;;;; memory); XOR-swizzled shared tiles, so that every ldmatrix (A: .x4, B: .x4.trans) reads
;;;; 8 rows from 8 different bank groups without padding; blocks rasterised in groups of 8
;;;; block rows for L2 reuse. M and N must be multiples of 128, K a multiple of 32.

;;; Issues k-tile `tile`'s copies into `stage`: 512 chunks of 16 bytes of A (128 rows × 4) and
;;; 512 of B (32 rows × 16), four of each per thread.
(defkernelmacro hg-load (stage tile)
  `(let ((k0 (* ,tile 32)))
     (tc-unroll (part 0 4)
       (let* ((idx (+ tid (* part 128)))
              (ar (/ idx 4))
              (ac (mod idx 4))
              (br (/ idx 16))
              (bc (mod idx 16)))
         (cp-async (pointer (aref as ,stage ar (* 8 (tc-swizzle ac ar 3 1))))
                   (pointer (aref a (+ (* (+ bm ar) k) k0 (* 8 ac))))
                   16)
         (cp-async (pointer (aref bs ,stage br (* 8 (tc-swizzle bc br 7 0))))
                   (pointer (aref b (+ (* (+ k0 br) n) bn (* 8 bc))))
                   16)))))

;;; A fragment of m16 tile `i` of the warp's rows at k16 step `kk`: lane l gives the address of
;;; row l % 16 at chunk 2 kk + l / 16, so the four matrices are A's (rows 0-7 | 8-15) × (k 0-7 |
;;; 8-15), the registers a0 … a3 of mma.m16n8k16.
(defkernelmacro hg-a-fragment (i)
  `(ldmatrix :x4 (pointer (aref as st (+ wm (* ,i 16) lr)
                                (* 8 (tc-swizzle (+ (* kk 2) lc) (+ wm (* ,i 16) lr) 3 1))))))

;;; B fragments of n8 tiles 2j and 2j+1 at k16 step kk, transposed from k-major rows: lane l
;;; gives row kk·16 + l % 16 at chunk wn/8 + 2j + l / 16.
(defkernelmacro hg-b-quad (j)
  `(ldmatrix :x4 :trans
             (pointer (aref bs st (+ (* kk 16) lr)
                            (* 8 (tc-swizzle (+ (/ wn 8) (* 2 ,j) lc) (+ (* kk 16) lr) 7 0))))))

;;; The B fragment (b0 b1, b2 b3) of n8 tile j: half of quad j / 2.
(defkernelmacro hg-b-fragment (j)
  (let ((quad (intern (format nil "bq-~a" (floor j 2)))))
    (if (oddp j)
        `(uint2 (uint4-z ,quad) (uint4-w ,quad))
        `(uint2 (uint4-x ,quad) (uint4-y ,quad)))))

;;; One stage: two k16 steps of the 64×64 warp tile (4 A and 4 B ldmatrix, 32 mma.sync each).
(defkernelmacro hg-compute (stage)
  `(let ((st ,stage))
     (tc-unroll (kk 0 2)
       (tc-bind-each (fa 4 hg-a-fragment)
         (tc-bind-each (bq 4 hg-b-quad)
           (tc-bind-each (fb 8 hg-b-fragment)
             (tc-mma-grid (:m16n8k16 :bf16) acc fa fb 4 8)))))))

;;; The epilogue of accumulator (i, j): rows g and g + 8 of m16 tile i, columns 2q and 2q + 1 of
;;; n8 tile j, rounded to BF16.
(defkernelmacro hg-store (i j v)
  `(let ((p (+ (* (+ bm wm (* ,i 16) g) n) bn wn (* ,j 8) (* 2 q))))
     (set (aref c p) (float-to-bfloat16 (float4-x ,v)))
     (set (aref c (+ p 1)) (float-to-bfloat16 (float4-y ,v)))
     (set (aref c (+ p (* 8 n))) (float-to-bfloat16 (float4-z ,v)))
     (set (aref c (+ p (* 8 n) 1)) (float-to-bfloat16 (float4-w ,v)))))

(defkernel hgemm (void ((a bfloat16* :restrict) (b bfloat16* :restrict) (c bfloat16* :restrict)
                        (m int) (n int) (k int)))
  (declare (launch-bounds 128))
  (with-shared-memory ((as bfloat16 3 128 32)
                       (bs bfloat16 3 32 128))
    (let* ((tid thread-idx-x)
           (lane (mod tid 32))
           (warp (/ tid 32))
           (g (/ lane 4))
           (q (mod lane 4))
           (lr (mod lane 16))
           (lc (/ lane 16))
           ;; Blocks run in groups of 8 block rows, column by column within a group, so
           ;; that the blocks resident at once share A's and B's panels in the L2.
           (pid (+ (* block-idx-y grid-dim-x) block-idx-x))
           (per-group (* 8 grid-dim-x))
           (first-row (* (/ pid per-group) 8))
           (rows (min (- grid-dim-y first-row) 8))
           (bm (* (+ first-row (mod (mod pid per-group) rows)) 128))
           (bn (* (/ (mod pid per-group) rows) 128))
           (wm (* (/ warp 2) 64))
           (wn (* (mod warp 2) 64)))
      (tc-with-accumulators (acc 4 8)
        (tc-pipeline (tile (/ k 32) 3) hg-load hg-compute)
        (tc-for-each-accumulator (acc 4 8) hg-store)))))

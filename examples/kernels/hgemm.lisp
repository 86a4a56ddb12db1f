;;;; hgemm: C = A·B with BF16 inputs, f32 accumulation and a BF16 result, on the tensor cores
;;;; through mma.sync m16n8k16 (sm_80 and newer), written with the tensor-core macro library
;;;; (`chorus_lang::library::TENSOR_CORE`, the `tc-` macros). A is M×K, B is K×N, C is M×N,
;;;; all row-major. Every warp computes a 64×warp-n warp tile (warp-n 64, or 32 with :warp-n)
;;;; of 4×(warp-n/8) float4 accumulators; a block is a grid of warps-m × warps-n warps over a
;;;; (64·warps-m)×(warp-n·warps-n)×tile-k block tile (tile-k 32 or 64), fed by a cp.async
;;;; pipeline of `stages` stages in dynamic shared memory; XOR-swizzled shared tiles, so that
;;;; every ldmatrix (A: .x4, B: .x4.trans) reads 8 rows from 8 different bank groups without
;;;; padding; blocks rasterised in groups of 8 block rows for L2 reuse.
;;;;
;;;; `define-hgemm` makes one kernel per block shape (the `hgemm` example times each):
;;;; `hgemm`, 128×128 (2×2 warps, 3 stages, 48 KiB); `hgemm-wide`, 128×256 (2×4 warps, 4
;;;; stages, 96 KiB) and `hgemm-tall`, 256×128 (4×2 warps, 4 stages, 96 KiB), which load a
;;;; quarter fewer bytes from L2 per flop than 128×128; `hgemm-k64`, 128×128 with k-tiles of
;;;; 64 (3 stages, 96 KiB: half the barriers and waits a k of `hgemm`'s); `hgemm-interleaved`,
;;;; `hgemm` with the next tile's copies issued between its last k16 step's ldmatrix and mma
;;;; instead of before its first ldmatrix; `hgemm-prefetch` and `hgemm-wide-prefetch`, `hgemm`
;;;; and `hgemm-wide` with the fragments double-buffered in registers
;;;; (`tc-pipeline-fragments`). M must be a multiple of the block tile's rows, N of its
;;;; columns, K of its tile-k.

;;; Where chunk `chunk` (16 bytes: 8 BF16) of row `row` of A's k-tile in `stage` lives in
;;; `smem`, in elements: A's rows are tile-k elements, swizzled by bits 1-2 of the row when they
;;; are 4 chunks (tile-k 32), by bits 0-2 when 8 (`a-swizzle-mask`, `a-swizzle-shift`).
(defkernelmacro hg-a-offset (stage row chunk)
  `(+ (* ,stage a-stage) (* ,row tile-k)
      (* 8 (tc-swizzle ,chunk ,row a-swizzle-mask a-swizzle-shift))))

;;; The same for B's k-tile (tile-k rows of tile-n elements, after every stage of A), swizzled by
;;; the row's low 3 bits within each 8-chunk (128-byte) group.
(defkernelmacro hg-b-offset (stage row chunk)
  `(+ b-base (* ,stage b-stage) (* ,row tile-n) (* 8 (tc-swizzle ,chunk ,row 7 0))))

;;; Issues k-tile `tile`'s copies into `stage`: tile-m × tile-k/8 chunks of A and tile-k ×
;;; tile-n/8 of B, `a-parts` and `b-parts` of each per thread (`threads` threads). (16-byte
;;; copies are `cp.async.cg`, cached in the L2 only, as CUTLASS's; `cache` :ca, for a probe,
;;; caches them in the L1 too.)
(defkernelmacro hg-load (stage tile a-parts b-parts threads &optional cache)
  `(let ((k0 (* ,tile tile-k)))
     (tc-unroll (part 0 ,a-parts)
       (let* ((idx (+ tid (* part ,threads)))
              (ar (/ idx (/ tile-k 8)))
              (ac (mod idx (/ tile-k 8))))
         (cp-async (pointer (aref smem (hg-a-offset ,stage ar ac)))
                   (pointer (aref a (+ (* (+ bm ar) k) k0 (* 8 ac))))
                   16 ,@(if cache (list cache) '()))))
     (tc-unroll (part 0 ,b-parts)
       (let* ((idx (+ tid (* part ,threads)))
              (br (/ idx (/ tile-n 8)))
              (bc (mod idx (/ tile-n 8))))
         (cp-async (pointer (aref smem (hg-b-offset ,stage br bc)))
                   (pointer (aref b (+ (* (+ k0 br) n) bn (* 8 bc))))
                   16 ,@(if cache (list cache) '()))))))

;;; A fragment of m16 tile `i` of the warp's rows at k16 step `kk`: lane l gives the address of
;;; row l % 16 at chunk 2 kk + l / 16, so the four matrices are A's (rows 0-7 | 8-15) × (k 0-7 |
;;; 8-15), the registers a0 … a3 of mma.m16n8k16.
(defkernelmacro hg-a-fragment (i)
  `(ldmatrix :x4 (pointer (aref smem (hg-a-offset st (+ wm (* ,i 16) lr) (+ (* kk 2) lc))))))

;;; B fragments of n8 tiles 2j and 2j+1 at k16 step kk, transposed from k-major rows: lane l
;;; gives row kk·16 + l % 16 at chunk wn/8 + 2j + l / 16.
(defkernelmacro hg-b-quad (j)
  `(ldmatrix :x4 :trans
             (pointer (aref smem (hg-b-offset st (+ (* kk 16) lr) (+ (/ wn 8) (* 2 ,j) lc))))))

;;; The B fragment of n8 tile j from the quads bq-0 … bq-3.
(defkernelmacro hg-b-fragment (j)
  `(tc-b-half bq ,j))

;;; One stage: `steps` k16 steps of the 64×(16·quads) warp tile (4 A and `quads` B ldmatrix,
;;; 8·quads mma.sync each); `issue` (the next tile's copies, from `tc-pipeline`'s
;;; :issue-in-compute), when given, goes between the last step's ldmatrix and its mma: the
;;; tile's first mma then follow their ldmatrix at once, the other steps' ldmatrix can be
;;; scheduled among them, and the copies are issued while the tensor cores work (ptxas keeps
;;; shared-memory accesses in source order).
(defkernelmacro hg-compute (stage steps quads &optional issue)
  `(let ((st ,stage))
     ,@(loop for step from 0 below steps
             collect `(symbol-macrolet ((kk ,step))
                        (tc-bind-each (fa 4 hg-a-fragment)
                          (tc-bind-each (bq ,quads hg-b-quad)
                            (tc-bind-each (fb ,(* 2 quads) hg-b-fragment)
                              ,@(if (and issue (= step (- steps 1))) (list issue) '())
                              (tc-mma-grid (:m16n8k16 :bf16) acc fa fb 4 ,(* 2 quads)))))))))

;;; Loads k16 step `step` of `stage` into register set `set`: its 4 A fragments and `quads` B
;;; quads.
(defkernelmacro hg-fetch (stage step set quads)
  `(let ((st ,stage))
     (symbol-macrolet ((kk ,step))
       (tc-fetch-set (fa bq ,set 4 ,quads) hg-a-fragment hg-b-quad))))

;;; For `:probe no-mma`: folds one word of each fragment of register set `set` into `sink`, so
;;; that ptxas keeps the ldmatrix that no mma reads (it drops loads whose results go unused).
(defkernelmacro hg-sink (set quads)
  `(tc-fold-set sink (fa bq ,set 4 ,quads)))

;;; The epilogue of accumulator (i, j): rows g and g + 8 of m16 tile i, columns 2q and 2q + 1 of
;;; n8 tile j, rounded to BF16.
(defkernelmacro hg-store (i j v)
  `(tc-store-bf16 c (+ (* (+ bm wm (* ,i 16) g) n) bn wn (* ,j 8) (* 2 q)) n ,v))

;;; (define-hgemm name warps-m warps-n stages &key tile-k warp-n min-blocks interleave prefetch
;;; probe): the kernel `name` with blocks of warps-m × warps-n warps (32·warps-m·warps-n
;;; threads) over (64·warps-m)×(warp-n·warps-n) tiles of C, warp tiles 64×warp-n (64, the
;;; default, or 32: half the accumulators and registers, so that more warps fit a
;;; multiprocessor, for 1.5 times the ldmatrix a mma), k-tiles of tile-k (32, the default, or
;;; 64), a grid of (N / tile columns, M / tile rows) blocks and (tile-m + tile-n)·tile-k·2·stages
;;; bytes of dynamic shared memory; :min-blocks N asks ptxas to fit N blocks a multiprocessor
;;; (launch-bounds' second value: it caps the registers). With :interleave, the next tile's
;;; copies go between the last k16 step's ldmatrix and mma; with :prefetch, the main loop is
;;; tc-pipeline-fragments' (two register sets of fragments, each step loading the next one's).
;;;
;;; A probe leaves work out to place the time of the rest (its result is wrong; the example
;;; does not check it): `:probe no-copies` issues no copies (the pipeline's waits and barriers,
;;; the ldmatrix and mma of every step remain, on whatever shared memory holds); `:probe
;;; mma-only` (with :prefetch) also loads no fragments, so only the mma.sync of the main loop,
;;; on fragments of BF16 values in [1, 1.25) that vary by lane, and the epilogue remain: the
;;; tensor cores' ceiling for this warp tile and block shape; `:probe no-mma` (with :prefetch)
;;; the other way round: the copies, waits, barriers and ldmatrix, no mma (the memory path's
;;; time, to set beside mma-only's: their sum or their maximum says how well the two overlap);
;;; `:probe l1-copies` makes every copy, as many as the kernel's, read k-tile 0 through the L1
;;; (`cp.async.ca`), so that after the first they come from the L1, not the L2: beside the
;;; kernel, what the L2's bandwidth and latency cost.
(defkernelmacro define-hgemm (name warps-m warps-n stages
                              &key (tile-k 32) (warp-n 64) min-blocks interleave prefetch
                                probe)
  (unless (member probe '(nil no-copies mma-only no-mma l1-copies))
    (error "define-hgemm: :probe is no-copies, mma-only, no-mma or l1-copies, not ~a" probe))
  (when (and (member probe '(mma-only no-mma)) (not prefetch))
    (error "define-hgemm: :probe ~a needs :prefetch t (its fragments are loaded apart)" probe))
  (unless (member warp-n '(32 64))
    (error "define-hgemm: :warp-n is 32 or 64, not ~a" warp-n))
  (let* ((threads (* 32 warps-m warps-n))
         (tile-m (* 64 warps-m))
         (tile-n (* warp-n warps-n))
         (quads (/ warp-n 16))
         (n8-tiles (/ warp-n 8)))
    `(defkernel ,name (void ((a bfloat16* :restrict) (b bfloat16* :restrict)
                             (c bfloat16* :restrict) (m int) (n int) (k int)))
       (declare (launch-bounds ,threads ,@(if min-blocks (list min-blocks) '())))
       (with-dynamic-shared-memory ((smem bfloat16))
         (symbol-macrolet ((tile-n ,tile-n)
                           (tile-k ,tile-k)
                           (a-swizzle-mask ,(if (= tile-k 32) 3 7))
                           (a-swizzle-shift ,(if (= tile-k 32) 1 0))
                           (a-stage ,(* tile-m tile-k))
                           (b-stage ,(* tile-k tile-n))
                           (b-base ,(* stages tile-m tile-k)))
           (macrolet ((load-k-tile (stage tile)
                        ,(if (member probe '(no-copies mma-only))
                             ''(progn)
                             `(list 'hg-load stage
                                    ,(if (eq probe 'l1-copies) 0 'tile)
                                    ,(/ (* tile-m tile-k) 8 threads)
                                    ,(/ (* tile-k tile-n) 8 threads) ,threads
                                    ,@(if (eq probe 'l1-copies) '(:ca) '()))))
                      (fetch-fragments (stage step set)
                        ,(if (eq probe 'mma-only)
                             ''(progn)
                             `(list 'hg-fetch stage step set ,quads)))
                      (mma-fragments (set)
                        ,(if (eq probe 'no-mma)
                             `(list 'hg-sink set ,quads)
                             `(list 'tc-mma-set '(:m16n8k16 :bf16) 'acc 'fa 'bq set 4 ,quads)))
                      (compute-k-tile (stage &optional issue)
                        (list 'hg-compute stage ,(/ tile-k 16) ,quads issue)))
             (let* ((tid thread-idx-x)
                    (lane (mod tid 32))
                    (warp (/ tid 32))
                    (g (/ lane 4))
                    (q (mod lane 4))
                    (lr (mod lane 16))
                    (lc (/ lane 16))
                    ;; Blocks run in groups of 8 block rows, column by column within a group,
                    ;; so that the blocks resident at once share A's and B's panels in the L2.
                    (pid (+ (* block-idx-y grid-dim-x) block-idx-x))
                    (per-group (* 8 grid-dim-x))
                    (first-row (* (/ pid per-group) 8))
                    (rows (min (- grid-dim-y first-row) 8))
                    (bm (* (+ first-row (mod (mod pid per-group) rows)) ,tile-m))
                    (bn (* (/ (mod pid per-group) rows) ,tile-n))
                    (wm (* (/ warp ,warps-n) 64))
                    (wn (* (mod warp ,warps-n) ,warp-n)))
               (tc-with-accumulators (acc 4 ,n8-tiles)
                 ,(if prefetch
                      (let ((pipeline
                              `(tc-pipeline-fragments (tile (/ k tile-k) ,stages ,(/ tile-k 16))
                                                      load-k-tile fetch-fragments mma-fragments)))
                        `(tc-with-fragment-sets
                             (fa bq 4 ,quads
                                 ,(if (eq probe 'mma-only)
                                      '(uint (logior #x3f803f80
                                                     (logand (* lane #x00050003) #x001f001f)))
                                      0))
                           ,(if (eq probe 'no-mma)
                                `(let ((sink (uint 0))) ; hg-sink's
                                   ,pipeline
                                   ;; A store that depends on every fragment loaded (never taken).
                                   (when (= sink #xffffffff)
                                     (set (aref c 0) (float-to-bfloat16 0.0))))
                                pipeline)))
                      `(tc-pipeline (tile (/ k tile-k) ,stages :issue-in-compute ,interleave)
                                    load-k-tile compute-k-tile))
                 (tc-for-each-accumulator (acc 4 ,n8-tiles) hg-store)))))))))

(define-hgemm hgemm 2 2 3)
(define-hgemm hgemm-wide 2 4 4)
(define-hgemm hgemm-tall 4 2 4)
(define-hgemm hgemm-k64 2 2 3 :tile-k 64)
(define-hgemm hgemm-interleaved 2 2 3 :interleave t)
(define-hgemm hgemm-prefetch 2 2 3 :prefetch t)
(define-hgemm hgemm-wide-prefetch 2 4 4 :prefetch t)

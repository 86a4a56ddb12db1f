;;;; attention: O = softmax(Q·Kᵀ·scale [+ causal mask])·V, a FlashAttention-2-style forward
;;;; pass on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async; sm_80 and newer), written
;;;; with the tensor-core macro library (`chorus_lang::library::TENSOR_CORE`, the `tc-` macros).
;;;; Q, K, V and O are [batch, heads, seq, d] row-major BF16; scores, softmax and the output
;;;; accumulate in f32. Head dimension d = 128 or 64 (one kernel each); seq a multiple of 128.
;;;;
;;;; One block (8 warps, 256 threads) owns 128 query rows of one (batch, head): warp w the 16
;;;; rows 16w … 16w+15, one m16 tile. Its Q fragments are loaded once (ldmatrix) and stay in
;;;; registers; the block then walks K/V tiles of 64 rows, double-buffered in shared memory by
;;;; cp.async (the next tile's copies run under this tile's arithmetic). Per K/V tile each warp
;;;;   * computes S = Q·Kᵀ (16×64: d/16 k16 steps × 8 n8 tiles of mma.sync; K's B fragments by
;;;;     ldmatrix without .trans, since K's rows are Kᵀ's columns);
;;;;   * causal: masks keys after the query (only the tiles that cross the diagonal; tiles
;;;;     wholly above it are skipped, per block and per warp);
;;;;   * updates the online softmax in registers: row max across the quad of lanes that share a
;;;;     row (shfl-xor 1 and 2), exp2 with scale·log2(e) folded into one fma, rescales the
;;;;     output accumulators and the (per-lane, partial) row sums;
;;;;   * rounds P to BF16 and multiplies P·V (V's B fragments by ldmatrix .trans).
;;;; At the end the row sums are reduced over the quad and O = acc / sum is stored as BF16.
;;;;
;;;; P reaches the P·V mma through shared memory: each warp writes its 16×64 P (BF16, swizzled)
;;;; into its own 2 KiB and reads it back as A fragments with ldmatrix. FlashAttention-2 keeps
;;;; P in registers (the accumulator of S·, packed to BF16 pairs, *is* the A fragment of P·V),
;;;; but the kernel language has no operation that packs two floats into the 32-bit register
;;;; of a bf16x2 (`cvt.rn.bf16x2.f32`), nor a bit cast from bfloat16 to an integer, so a
;;;; fragment register can only be filled from memory. `at-p-fragment` is the one place that
;;;; would change.
;;;;
;;;; Shared memory (dynamic, BF16 elements): the Q tile (128 × d; after the Q fragments are in
;;;; registers, the warps' P tiles), then `stages` K tiles and `stages` V tiles of 64 × d.
;;;; Every tile row is 128 or 256 bytes, XOR-swizzled by 16-byte chunks (`tc-swizzle` mask 7,
;;;; shift 0), so that the 8 rows of every ldmatrix matrix and of every P store fall in 8
;;;; different bank groups. 2 stages: 96 KiB (d = 128), 48 KiB (d = 64).

;;; The element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of rows of
;;; `width` BF16 (64 or more: 128 bytes or more a row).
(defkernelmacro at-sw (row chunk width)
  `(+ (* ,row ,width) (* 8 (tc-swizzle ,chunk ,row 7 0))))

;;; Issues the copies of `rows` rows of the head (from row `row0` of `src`, this block's
;;; (batch, head)) into the swizzled tile at shared offset `dst`: 16 bytes a copy, `rows`·d/8
;;; of them over the 256 threads.
(defkernelmacro at-copy-tile (dst src row0 rows d)
  `(tc-unroll (part 0 ,(/ (* rows d) (* 8 256)))
     (let* ((idx (+ tid (* part 256)))
            (row (/ idx ,(/ d 8)))
            (ch (mod idx ,(/ d 8))))
       (cp-async (pointer (aref smem (+ ,dst (at-sw row ch ,d))))
                 (pointer (aref ,src (+ base (* (+ ,row0 row) ,d) (* 8 ch))))
                 16))))

;;; Issues K/V tile `tile`'s copies into `stage`.
(defkernelmacro at-load-kv (d stage tile)
  `(let ((r0 (* ,tile 64)))
     (at-copy-tile (+ ks (* ,stage ,(* 64 d))) key r0 64 ,d)
     (at-copy-tile (+ vs (* ,stage ,(* 64 d))) value r0 64 ,d)))

;;; Binds qf-0 … qf-(d/16 − 1), the warp's Q A fragments (rows 16w … 16w+15, k16 step kk),
;;; around body: lane l gives row l % 16 at chunk 2 kk + l / 16.
(defkernelmacro at-with-q-fragments (d &body body)
  `(let ,(loop for kk from 0 below (/ d 16)
               collect `(,(intern (format nil "qf-~a" kk))
                         (ldmatrix :x4 (pointer (aref smem (at-sw (+ wr lr) (+ ,(* 2 kk) lc) ,d))))))
     ,@body))

;;; The B fragments (for S = Q·Kᵀ) of n8 tiles 2j and 2j+1 at k16 step kk: Kᵀ's columns are
;;; K's rows, so no .trans. Lanes 0-7 give key rows 16j … 16j+7 at chunk 2kk (b0 of tile 2j),
;;; lanes 8-15 the same rows at chunk 2kk+1 (b1), lanes 16-31 rows 16j+8 … likewise (tile 2j+1).
(defkernelmacro at-k-quad (j)
  `(ldmatrix :x4 (pointer (aref smem (+ kbase (at-sw (+ ,(* 16 j) kr) (+ (* 2 kk) kc) hd))))))

;;; The B fragment (b0 b1) of S's n8 tile j: half of K quad j / 2.
(defkernelmacro at-k-fragment (j)
  (let ((quad (intern (format nil "kq-~a" (floor j 2)))))
    (if (oddp j)
        `(uint2 (uint4-z ,quad) (uint4-w ,quad))
        `(uint2 (uint4-x ,quad) (uint4-y ,quad)))))

;;; The B fragments (for O += P·V) of O's n8 tiles 2j and 2j+1 at k16 step kk (keys 16kk …),
;;; transposed from V's key-major rows: lane l gives key row 16kk + l % 16 at chunk 2j + l / 16.
(defkernelmacro at-v-quad (j)
  `(ldmatrix :x4 :trans (pointer (aref smem (+ vbase (at-sw (+ (* 16 kk) lr) (+ ,(* 2 j) lc) hd))))))

;;; The B fragment of O's n8 tile j: half of V quad j / 2.
(defkernelmacro at-v-fragment (j)
  (let ((quad (intern (format nil "vq-~a" (floor j 2)))))
    (if (oddp j)
        `(uint2 (uint4-z ,quad) (uint4-w ,quad))
        `(uint2 (uint4-x ,quad) (uint4-y ,quad)))))

;;; S = Q·Kᵀ for the warp's 16 rows and the tile's 64 keys: s-0-0 … s-0-7 (8 n8 tiles),
;;; d/16 k16 steps of 4 ldmatrix and 8 mma.sync.
(defkernelmacro at-scores (d)
  `(progn
     ,@(loop for kk from 0 below (/ d 16)
             collect `(symbol-macrolet ((kk ,kk))
                        (let ((qa-0 ,(intern (format nil "qf-~a" kk))))
                          (tc-bind-each (kq 4 at-k-quad)
                            (tc-bind-each (kb 8 at-k-fragment)
                              (tc-mma-grid (:m16n8k16 :bf16) s qa kb 1 8))))))))

;;; The causal mask of a tile that crosses the diagonal: scores of keys after the row's query
;;; become −10^30 (exp2 of it, scaled, is 0). S's n8 tile j holds keys k0 + 8j + 2q (+1) of
;;; rows row-g (x, y) and row-g + 8 (z, w).
(defkernelmacro at-mask ()
  `(progn
     ,@(loop for j from 0 below 8
             collect (let ((s (intern (format nil "s-0-~a" j))))
                       `(let ((col (+ k0 ,(* 8 j) (* 2 qd))))
                          (set (float4-x ,s) (if (> col row-g) -1e30 (float4-x ,s)))
                          (set (float4-y ,s) (if (> (+ col 1) row-g) -1e30 (float4-y ,s)))
                          (set (float4-z ,s) (if (> col (+ row-g 8)) -1e30 (float4-z ,s)))
                          (set (float4-w ,s) (if (> (+ col 1) (+ row-g 8)) -1e30 (float4-w ,s))))))))

;;; The online softmax step for rows row-g (m0, l0; x and y of each tile) and row-g + 8 (m1, l1;
;;; z and w): the tile's row maxima over the quad, the new running maxima (in units of
;;; scale·log2 e), S ← exp2(S·scale·log2 e − max), the partial row sums and the d/8 output
;;; accumulators rescaled by exp2(old max − new max).
(defkernelmacro at-softmax (d)
  (let ((ss (loop for j from 0 below 8 collect (intern (format nil "s-0-~a" j))))
        (os (loop for j from 0 below (/ d 8) collect (intern (format nil "o-0-~a" j)))))
    `(let ((mx0 (max ,@(loop for s in ss append `((float4-x ,s) (float4-y ,s)))))
           (mx1 (max ,@(loop for s in ss append `((float4-z ,s) (float4-w ,s))))))
       (set mx0 (max mx0 (shfl-xor-sync (uint -1) mx0 1)))
       (set mx1 (max mx1 (shfl-xor-sync (uint -1) mx1 1)))
       (set mx0 (max mx0 (shfl-xor-sync (uint -1) mx0 2)))
       (set mx1 (max mx1 (shfl-xor-sync (uint -1) mx1 2)))
       (let* ((new0 (max m0 (* mx0 scale-log2)))
              (new1 (max m1 (* mx1 scale-log2)))
              (c0 (exp2 (- m0 new0)))
              (c1 (exp2 (- m1 new1)))
              (neg0 (- new0))
              (neg1 (- new1)))
         (set m0 new0)
         (set m1 new1)
         ,@(loop for s in ss
                 collect `(set ,s (float4 (exp2 (fma (float4-x ,s) scale-log2 neg0))
                                          (exp2 (fma (float4-y ,s) scale-log2 neg0))
                                          (exp2 (fma (float4-z ,s) scale-log2 neg1))
                                          (exp2 (fma (float4-w ,s) scale-log2 neg1)))))
         (set l0 (+ (* l0 c0) ,@(loop for s in ss append `((float4-x ,s) (float4-y ,s)))))
         (set l1 (+ (* l1 c1) ,@(loop for s in ss append `((float4-z ,s) (float4-w ,s)))))
         ,@(loop for o in os
                 collect `(set ,o (float4 (* (float4-x ,o) c0) (* (float4-y ,o) c0)
                                          (* (float4-z ,o) c1) (* (float4-w ,o) c1))))))))

;;; P (the exponentials, rounded to BF16) into the warp's 16×64 tile at `pbase` (rows of 128
;;; bytes, swizzled: chunk j of row g is at j XOR g, so a store's 32 lanes hit 32 banks).
(defkernelmacro at-store-p ()
  `(progn
     ,@(loop for j from 0 below 8
             collect (let ((s (intern (format nil "s-0-~a" j))))
                       `(let ((e (+ pbase (* g 64) (* 8 (logxor ,j g)) (* 2 qd))))
                          (set (aref smem e) (float-to-bfloat16 (float4-x ,s)))
                          (set (aref smem (+ e 1)) (float-to-bfloat16 (float4-y ,s)))
                          (set (aref smem (+ e 512)) (float-to-bfloat16 (float4-z ,s)))
                          (set (aref smem (+ e 513)) (float-to-bfloat16 (float4-w ,s))))))
     (syncwarp)))

;;; P's A fragment at k16 step kk (keys 16kk … 16kk+15), read back with ldmatrix.
(defkernelmacro at-p-fragment (kk)
  `(ldmatrix :x4 (pointer (aref smem (+ pbase (at-sw lr (+ ,(* 2 kk) lc) 64))))))

;;; O += P·V: 4 k16 steps (the tile's 64 keys) of d/16 ldmatrix .trans and d/8 mma.sync.
(defkernelmacro at-pv (d)
  `(progn
     ,@(loop for kk from 0 below 4
             collect `(symbol-macrolet ((kk ,kk))
                        (let ((pa-0 (at-p-fragment ,kk)))
                          (tc-bind-each (vq ,(/ d 16) at-v-quad)
                            (tc-bind-each (vb ,(/ d 8) at-v-fragment)
                              (tc-mma-grid (:m16n8k16 :bf16) o pa vb 1 ,(/ d 8)))))))))

;;; One K/V tile (in `stage`, keys from 64·tile) for the warp: skipped when causal and every
;;; key follows every row of the warp; masked when causal and the tile crosses the diagonal.
(defkernelmacro at-tile (d causal stages stage tile)
  (let ((work `(tc-with-accumulators (s 1 8)
                 (at-scores ,d)
                 ,@(when causal `((when (> (+ k0 63) row-w) (at-mask))))
                 (at-softmax ,d)
                 (at-store-p)
                 (at-pv ,d))))
    `(let ((kbase (+ ks (* ,stage ,(* 64 d))))
           (vbase (+ vs (* ,stage ,(* 64 d))))
           (k0 (* ,tile 64)))
       ,(if causal
            ;; k0 and row-w are multiples of 16: the warp's last row is at or after key k0
            ;; exactly when its first is.
            `(when (<= k0 row-w) ,work)
            work))))

;;; The epilogue of O's n8 tile j: rows row-g and row-g + 8, columns 8j + 2q, 8j + 2q + 1,
;;; divided by the row sums and rounded to BF16.
(defkernelmacro at-store-o (i j v)
  (declare (ignore i))
  `(let ((p (+ base (* row-g hd) ,(* 8 j) (* 2 qd))))
     (set (aref out p) (float-to-bfloat16 (* (float4-x ,v) inv0)))
     (set (aref out (+ p 1)) (float-to-bfloat16 (* (float4-y ,v) inv0)))
     (set (aref out (+ p (* 8 hd))) (float-to-bfloat16 (* (float4-z ,v) inv1)))
     (set (aref out (+ p (* 8 hd) 1)) (float-to-bfloat16 (* (float4-w ,v) inv1)))))

;;; (define-attention name d causal stages): the kernel `name` for head dimension d (64 or 128)
;;; with `stages` K/V buffers (2 or more). Grid (seq/128, batch·heads), 256 threads, dynamic
;;; shared memory (128 + 2·64·stages)·d·2 bytes. Arguments: Q, K, V, O, seq and
;;; scale·log2(e) (positive).
(defkernelmacro define-attention (name d causal stages)
  `(defkernel ,name (void ((query bfloat16* :restrict) (key bfloat16* :restrict)
                           (value bfloat16* :restrict) (out bfloat16* :restrict)
                           (seq int) (scale-log2 float)))
     (declare (launch-bounds 256))
     (with-dynamic-shared-memory ((smem bfloat16))
       (symbol-macrolet ((hd ,d))
         (let* ((tid thread-idx-x)
                (lane (mod tid 32))
                (warp (/ tid 32))
                (g (/ lane 4))
                (qd (mod lane 4))
                (lr (mod lane 16))
                (lc (/ lane 16))
                (kr (+ (mod lane 8) (* 8 lc)))
                (kc (mod (/ lane 8) 2))
                ;; Causal blocks take their query tiles last to first: the longest start first.
                (q0 (* ,(if causal '(- grid-dim-x 1 block-idx-x) 'block-idx-x) 128))
                (base (* block-idx-y seq ,d))
                (wr (* warp 16))
                (row-w (+ q0 wr))
                (row-g (+ row-w g))
                (ks ,(* 128 d))
                (vs ,(* (+ 128 (* 64 stages)) d))
                (pbase (* warp 1024))
                (tiles ,(if causal '(/ (+ q0 128) 64) '(/ seq 64)))
                (m0 -1e30)
                (m1 -1e30)
                (l0 0.0)
                (l1 0.0))
           ;; Q, then the first stages − 1 K/V tiles, each its own group.
           (at-copy-tile 0 query q0 128 ,d)
           (cp-async-commit)
           ,@(loop for p from 0 below (- stages 1)
                   collect `(progn
                              (when (< ,p tiles) (at-load-kv ,d ,p ,p))
                              (cp-async-commit)))
           (cp-async-wait ,(- stages 1))
           (syncthreads)
           (at-with-q-fragments ,d
             (tc-with-accumulators (o 1 ,(/ d 8))
               (for (tile 0 (< tile tiles) (+ tile 1))
                 ;; Tile `tile` has arrived and every warp is done with the stage refilled
                 ;; next (and, the first time, with the Q tile that holds the P tiles).
                 (cp-async-wait ,(- stages 2))
                 (syncthreads)
                 (let ((ahead (+ tile ,(- stages 1))))
                   (when (< ahead tiles)
                     (at-load-kv ,d (mod ahead ,stages) ahead))
                   (cp-async-commit))
                 (at-tile ,d ,causal ,stages (mod tile ,stages) tile))
               (cp-async-wait-all)
               (set l0 (+ l0 (shfl-xor-sync (uint -1) l0 1)))
               (set l1 (+ l1 (shfl-xor-sync (uint -1) l1 1)))
               (set l0 (+ l0 (shfl-xor-sync (uint -1) l0 2)))
               (set l1 (+ l1 (shfl-xor-sync (uint -1) l1 2)))
               (let ((inv0 (/ 1.0 l0))
                     (inv1 (/ 1.0 l1)))
                 (tc-for-each-accumulator (o 1 ,(/ d 8)) at-store-o)))))))))

(define-attention attention-d128 128 nil 2)
(define-attention attention-d128-causal 128 t 2)
(define-attention attention-d64 64 nil 2)
(define-attention attention-d64-causal 64 t 2)

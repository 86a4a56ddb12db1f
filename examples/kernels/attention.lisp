;;;; attention: O = softmax(Q·Kᵀ·scale [+ causal mask])·V, a FlashAttention-2-style forward
;;;; pass on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async; sm_80 and newer), written
;;;; with the tensor-core macro library (`chorus_lang::library::TENSOR_CORE`, the `tc-` macros).
;;;; Q, K, V and O are [batch, heads, seq, d] row-major BF16; scores, softmax and the output
;;;; accumulate in f32. Head dimension d = 128 or 64; seq a multiple of 128.
;;;;
;;;; One block owns 128 query rows of one (batch, head) and walks K/V tiles of 64 rows,
;;;; double-buffered in shared memory by cp.async (the next tile's copies run under this
;;;; tile's arithmetic). Its warps split the rows in m16 tiles, in one of two shapes:
;;;;   * w8: 8 warps (256 threads) of one m16 tile; the Q fragments are loaded once and stay in
;;;;     registers;
;;;;   * w4: 4 warps (128 threads) of two m16 tiles (FlashAttention-2's 128×64 tiling on
;;;;     sm_90): every K and V fragment feeds two m16 tiles, which halves the ldmatrix traffic
;;;;     per mma; the Q fragments are reloaded from shared memory for every K/V tile (there
;;;;     are not registers for them), and two blocks share an SM.
;;;; Per K/V tile each warp
;;;;   * computes S = Q·Kᵀ (d/16 k16 steps × 8 n8 tiles of mma.sync per m16 tile; K's B
;;;;     fragments by ldmatrix without .trans, since K's rows are Kᵀ's columns);
;;;;   * causal: masks keys after the query (only in tiles that cross the diagonal; tiles
;;;;     wholly above it are skipped, per block and per warp);
;;;;   * updates the online softmax in registers: row max across the quad of lanes that share a
;;;;     row (shfl-xor 1 and 2), exp2 with scale·log2(e) folded into one fma, rescales the
;;;;     output accumulators and the (per-lane, partial) row sums;
;;;;   * rounds P to BF16 and multiplies P·V (P's A fragments packed from S's accumulators in
;;;;     registers, V's B fragments by ldmatrix .trans).
;;;; At the end the row sums are reduced over the quad and O = acc / sum is stored as BF16.
;;;;
;;;; P stays in registers, as in FlashAttention-2: the accumulators of S, rounded to BF16 and
;;;; packed two by two into 32-bit registers (`pack-bf16x2`, cvt.rn.bf16x2.f32), *are* the A
;;;; fragments of the P·V mma (`at-p-fragment`), so P never touches shared memory.
;;;;
;;;; Shared memory (dynamic, BF16 elements): the Q tile (128 × d), then `stages` K tiles and
;;;; `stages` V tiles of 64 × d. Every tile row is 128 or 256 bytes, XOR-swizzled by 16-byte
;;;; chunks (`tc-swizzle` mask 7, shift 0), so that the 8 rows of every ldmatrix matrix fall in
;;;; 8 different bank groups. With 2 stages, both shapes: 96 KiB (d = 128) or 48 KiB (d = 64).

;;; The element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of rows of
;;; `width` BF16 (64 or more: 128 bytes or more a row).
(defkernelmacro at-sw (row chunk width)
  `(+ (* ,row ,width) (* 8 (tc-swizzle ,chunk ,row 7 0))))

;;; The same offset for the ldmatrix addresses, split into what every lane has and what varies:
;;; row `row` + `lane-row` and chunk `chunk` + `lane-chunk`, with `row` and `chunk` (even)
;;; the same for the whole warp, a multiple of 8 and a literal, and the lane's parts small.
;;; Then the swizzle term is (chunk mod 8) XOR y with y = lane-chunk XOR (lane-row mod 8), one
;;; of four values per lane, so each address is a per-lane register plus a constant.
(defkernelmacro at-sw-split (row lane-row chunk y width)
  `(+ (+ (* ,row ,width) (* 8 (- ,chunk (mod ,chunk 8))))
      (+ (* ,lane-row ,width) (* 8 (logxor (mod ,chunk 8) ,y)))))

;;; Issues the copies of `rows` rows of the head (from row `row0` of `src`, this block's
;;; (batch, head)) into the swizzled tile at shared offset `dst`: 16 bytes a copy, `rows`·d/8
;;; of them over the block's `threads`. Thread t copies chunk t mod d/8 of rows t / (d/8) +
;;; p·step (step = threads/(d/8) rows a pass, a multiple of 8, so the swizzle is the same for
;;; every pass): per-thread offsets cs-off and cg-off, plus constants.
(defkernelmacro at-copy-tile (dst src row0 rows d threads)
  (let ((step (/ threads (/ d 8))))
    (assert (= 0 (mod step 8)))
    `(let ((s0 (+ ,dst cs-off))
           (g0 (+ base (* ,row0 ,d) cg-off)))
       (tc-unroll (part 0 ,(/ rows step))
         (cp-async (pointer (aref smem (+ s0 (* part ,(* step d)))))
                   (pointer (aref ,src (+ g0 (* part ,(* step d)))))
                   16)))))

;;; Issues K/V tile `tile`'s copies into `stage`.
(defkernelmacro at-load-kv (d threads stage tile)
  `(let ((r0 (* ,tile 64)))
     (at-copy-tile (+ ks (* ,stage ,(* 64 d))) key r0 64 ,d ,threads)
     (at-copy-tile (+ vs (* ,stage ,(* 64 d))) value r0 64 ,d ,threads)))

;;; The Q A fragment of the warp's m16 tile i at k16 step kk (both literals) from the Q tile:
;;; lane l gives row l % 16 of the m16 tile at chunk 2 kk + l / 16.
(defkernelmacro at-q-fragment (i kk)
  `(ldmatrix :x4 (pointer (aref smem (+ (* wr hd) (at-sw-split ,(* 16 i) lr ,(* 2 kk) ylc hd))))))

;;; Binds qf-I-KK, every Q fragment of the warp, around body (the variant that keeps Q in
;;; registers).
(defkernelmacro at-with-q-registers (d mt &body body)
  `(let ,(loop for i from 0 below mt
               append (loop for kk from 0 below (/ d 16)
                            collect `(,(intern (format nil "qf-~a-~a" i kk))
                                      (at-q-fragment ,i ,kk))))
     ,@body))

;;; The B fragments (for S = Q·Kᵀ) of n8 tiles 2j and 2j+1 at k16 step kk: Kᵀ's columns are
;;; K's rows, so no .trans. Lanes 0-7 give key rows 16j … 16j+7 at chunk 2kk (b0 of tile 2j),
;;; lanes 8-15 the same rows at chunk 2kk+1 (b1), lanes 16-31 rows 16j+8 … likewise (tile 2j+1).
(defkernelmacro at-k-quad (j)
  `(ldmatrix :x4 (pointer (aref smem (+ kbase (at-sw-split ,(* 16 j) kr (* 2 kk) ykc hd))))))

;;; The B fragment (b0 b1) of S's n8 tile j: half of K quad j / 2.
(defkernelmacro at-k-fragment (j)
  (let ((quad (intern (format nil "kq-~a" (floor j 2)))))
    (if (oddp j)
        `(uint2 (uint4-z ,quad) (uint4-w ,quad))
        `(uint2 (uint4-x ,quad) (uint4-y ,quad)))))

;;; The B fragments (for O += P·V) of O's n8 tiles 2j and 2j+1 at k16 step kk (keys 16kk …),
;;; transposed from V's key-major rows: lane l gives key row 16kk + l % 16 at chunk 2j + l / 16.
(defkernelmacro at-v-quad (j)
  `(ldmatrix :x4 :trans
             (pointer (aref smem (+ vbase (at-sw-split (* 16 kk) lr ,(* 2 j) ylc hd))))))

;;; The B fragment of O's n8 tile j: half of V quad j / 2.
(defkernelmacro at-v-fragment (j)
  (let ((quad (intern (format nil "vq-~a" (floor j 2)))))
    (if (oddp j)
        `(uint2 (uint4-z ,quad) (uint4-w ,quad))
        `(uint2 (uint4-x ,quad) (uint4-y ,quad)))))

;;; S = Q·Kᵀ for the warp's mt m16 tiles and the tile's 64 keys: s-I-0 … s-I-7 (8 n8 tiles
;;; each), d/16 k16 steps of 4 ldmatrix (each K fragment feeds mt m16 tiles) and 8·mt mma.sync.
;;; The Q fragments qa-I come from registers (`qregs`) or from the Q tile.
(defkernelmacro at-scores (d mt qregs)
  `(progn
     ,@(loop for kk from 0 below (/ d 16)
             collect `(symbol-macrolet ((kk ,kk))
                        (let ,(loop for i from 0 below mt
                                    collect `(,(intern (format nil "qa-~a" i))
                                              ,(if qregs
                                                   (intern (format nil "qf-~a-~a" i kk))
                                                   `(at-q-fragment ,i ,kk))))
                          (tc-bind-each (kq 4 at-k-quad)
                            (tc-bind-each (kb 8 at-k-fragment)
                              (tc-mma-grid (:m16n8k16 :bf16) s qa kb ,mt 8))))))))

;;; The causal mask of a tile that crosses the diagonal: scores of keys after the row's query
;;; become −10^30 (their exponential is 0). S's n8 tile j of m16 tile i holds keys
;;; k0 + 8j + 2q (+1) of rows row-g + 16i (x, y) and row-g + 16i + 8 (z, w).
(defkernelmacro at-mask (mt)
  `(progn
     ,@(loop for i from 0 below mt
             append (loop for j from 0 below 8
                          collect (let ((s (intern (format nil "s-~a-~a" i j))))
                                    `(let ((col (+ k0 ,(* 8 j) (* 2 qd)))
                                           (r (+ row-g ,(* 16 i))))
                                       (set (float4-x ,s) (if (> col r) -1e30 (float4-x ,s)))
                                       (set (float4-y ,s) (if (>= col r) -1e30 (float4-y ,s)))
                                       (set (float4-z ,s) (if (> col (+ r 8)) -1e30 (float4-z ,s)))
                                       (set (float4-w ,s) (if (>= col (+ r 8)) -1e30 (float4-w ,s)))))))))

;;; The online softmax step of m16 tile i, rows row-g + 16i (running max rmax-I-0, sum
;;; rsum-I-0: x and y of each n8 tile) and row-g + 16i + 8 (rmax-I-1, rsum-I-1: z and w): the
;;; tile's row maxima over the quad of lanes that share the rows (shfl-xor 1, 2), the new
;;; running maxima (of the scores times scale·log2 e), S ← exp2(S·scale·log2 e − max) (one fma
;;; and one exp2), the per-lane partial row sums, and the output accumulators rescaled by
;;; exp2(old max − new max).
(defkernelmacro at-softmax (d mt)
  `(progn
     ,@(loop
         for i from 0 below mt
         collect
         (let ((ss (loop for j from 0 below 8 collect (intern (format nil "s-~a-~a" i j))))
               (os (loop for j from 0 below (/ d 8) collect (intern (format nil "o-~a-~a" i j))))
               (m0 (intern (format nil "rmax-~a-0" i)))
               (m1 (intern (format nil "rmax-~a-1" i)))
               (l0 (intern (format nil "rsum-~a-0" i)))
               (l1 (intern (format nil "rsum-~a-1" i))))
           `(let ((mx0 (max ,@(loop for s in ss append `((float4-x ,s) (float4-y ,s)))))
                  (mx1 (max ,@(loop for s in ss append `((float4-z ,s) (float4-w ,s))))))
              (set mx0 (max mx0 (shfl-xor-sync (uint -1) mx0 1)))
              (set mx1 (max mx1 (shfl-xor-sync (uint -1) mx1 1)))
              (set mx0 (max mx0 (shfl-xor-sync (uint -1) mx0 2)))
              (set mx1 (max mx1 (shfl-xor-sync (uint -1) mx1 2)))
              (let* ((new0 (max ,m0 (* mx0 scale-log2)))
                     (new1 (max ,m1 (* mx1 scale-log2)))
                     (c0 (exp2 (- ,m0 new0)))
                     (c1 (exp2 (- ,m1 new1)))
                     (neg0 (- new0))
                     (neg1 (- new1)))
                (set ,m0 new0)
                (set ,m1 new1)
                ,@(loop for s in ss
                        collect `(set ,s (float4 (exp2 (fma (float4-x ,s) scale-log2 neg0))
                                                 (exp2 (fma (float4-y ,s) scale-log2 neg0))
                                                 (exp2 (fma (float4-z ,s) scale-log2 neg1))
                                                 (exp2 (fma (float4-w ,s) scale-log2 neg1)))))
                (set ,l0 (+ (* ,l0 c0) ,@(loop for s in ss append `((float4-x ,s) (float4-y ,s)))))
                (set ,l1 (+ (* ,l1 c1) ,@(loop for s in ss append `((float4-z ,s) (float4-w ,s)))))
                ,@(loop for o in os
                        collect `(set ,o (float4 (* (float4-x ,o) c0) (* (float4-y ,o) c0)
                                                 (* (float4-z ,o) c1) (* (float4-w ,o) c1))))))))))

;;; P's A fragment of m16 tile i at k16 step kk (keys 16kk … 16kk+15), in registers: the
;;; exponentials of S's n8 tiles 2kk (keys 16kk …, the fragment's columns 0-7) and 2kk+1
;;; (columns 8-15), rounded to BF16 and packed two by two (pack-bf16x2, the lower column in
;;; the lower half). An accumulator holds row g in x, y and row g+8 in z, w, at columns 2q,
;;; 2q+1; the A fragment holds row g in x (columns 2q, 2q+1) and z (2q+8, 2q+9), row g+8 in y
;;; and w. So x = tile 2kk's x, y; y = its z, w; z = tile 2kk+1's x, y; w = its z, w:
;;; FlashAttention-2's accumulator-to-A-fragment identity, with no shared memory.
(defkernelmacro at-p-fragment (i kk)
  (let ((a (intern (format nil "s-~a-~a" i (* 2 kk))))
        (b (intern (format nil "s-~a-~a" i (+ (* 2 kk) 1)))))
    `(uint4 (pack-bf16x2 (float4-x ,a) (float4-y ,a))
            (pack-bf16x2 (float4-z ,a) (float4-w ,a))
            (pack-bf16x2 (float4-x ,b) (float4-y ,b))
            (pack-bf16x2 (float4-z ,b) (float4-w ,b)))))

;;; O += P·V: 4 k16 steps (the tile's 64 keys) of d/16 ldmatrix .trans (each V fragment feeds
;;; mt m16 tiles) and mt·d/8 mma.sync.
(defkernelmacro at-pv (d mt)
  `(progn
     ,@(loop for kk from 0 below 4
             collect `(symbol-macrolet ((kk ,kk))
                        (let ,(loop for i from 0 below mt
                                    collect `(,(intern (format nil "pa-~a" i))
                                              (at-p-fragment ,i ,kk)))
                          (tc-bind-each (vq ,(/ d 16) at-v-quad)
                            (tc-bind-each (vb ,(/ d 8) at-v-fragment)
                              (tc-mma-grid (:m16n8k16 :bf16) o pa vb ,mt ,(/ d 8)))))))))

;;; One K/V tile (in `stage`, keys from 64·tile) for the warp: skipped when causal and every
;;; key follows every row of the warp; masked when causal and the tile crosses the diagonal.
(defkernelmacro at-tile (d causal mt qregs stage tile)
  (let ((work `(tc-with-accumulators (s ,mt 8)
                 (at-scores ,d ,mt ,qregs)
                 ,@(when causal `((when (> (+ k0 63) row-w) (at-mask ,mt))))
                 (at-softmax ,d ,mt)
                 (at-pv ,d ,mt))))
    `(let ((kbase (+ ks (* ,stage ,(* 64 d))))
           (vbase (+ vs (* ,stage ,(* 64 d))))
           (k0 (* ,tile 64)))
       ,(if causal
            ;; k0 and row-w are multiples of the warp's rows (16·mt ≤ 64): the warp's last row
            ;; is at or after key k0 exactly when its first is.
            `(when (<= k0 row-w) ,work)
            work))))

;;; Reduces the partial row sums over the quad and binds inv-I-H = 1 / rsum-I-H around body.
(defkernelmacro at-with-inverse-sums (mt &body body)
  (let ((sums (loop for i from 0 below mt
                    append (loop for h from 0 below 2
                                 collect (list (intern (format nil "rsum-~a-~a" i h))
                                               (intern (format nil "inv-~a-~a" i h)))))))
    `(progn
       ,@(loop for pair in sums
               collect (let ((l (first pair)))
                         `(progn
                            (set ,l (+ ,l (shfl-xor-sync (uint -1) ,l 1)))
                            (set ,l (+ ,l (shfl-xor-sync (uint -1) ,l 2))))))
       (let ,(loop for pair in sums collect `(,(second pair) (/ 1.0 ,(first pair))))
         ,@body))))

;;; The epilogue of O's n8 tile j of m16 tile i: rows row-g + 16i (and + 8), columns 8j + 2q,
;;; 8j + 2q + 1, divided by the row sums and rounded to BF16.
(defkernelmacro at-store-o (i j v)
  (let ((inv0 (intern (format nil "inv-~a-0" i)))
        (inv1 (intern (format nil "inv-~a-1" i))))
    `(let ((p (+ base (* (+ row-g ,(* 16 i)) hd) ,(* 8 j) (* 2 qd))))
       (set (aref out p) (float-to-bfloat16 (* (float4-x ,v) ,inv0)))
       (set (aref out (+ p 1)) (float-to-bfloat16 (* (float4-y ,v) ,inv0)))
       (set (aref out (+ p (* 8 hd))) (float-to-bfloat16 (* (float4-z ,v) ,inv1)))
       (set (aref out (+ p (* 8 hd) 1)) (float-to-bfloat16 (* (float4-w ,v) ,inv1))))))

;;; (define-attention name d causal warps mt qregs stages blocks): the kernel `name` for head
;;; dimension d (64 or 128): `warps` warps of `mt` m16 tiles each (16·warps·mt = 128 query rows
;;; a block), Q fragments kept in registers (`qregs`) or reloaded from the Q tile at every K/V
;;; tile, `stages` K/V buffers (2 or more), launch bounds for `blocks` blocks per SM. Grid
;;; (seq/128, batch·heads), 32·warps threads, dynamic shared memory (128 + 128·stages)·d·2
;;; bytes. Arguments: Q, K, V, O, seq and scale·log2 e (the scale of Q·Kᵀ, positive).
(defkernelmacro define-attention (name d causal warps mt qregs stages blocks)
  (let* ((threads (* 32 warps))
         (rows (* 16 warps mt))
         (state (loop for i from 0 below mt
                      append (loop for h from 0 below 2
                                   append `((,(intern (format nil "rmax-~a-~a" i h)) -1e30)
                                            (,(intern (format nil "rsum-~a-~a" i h)) 0.0)))))
         (main `(tc-with-accumulators (o ,mt ,(/ d 8))
                  (for (tile 0 (< tile tiles) (+ tile 1))
                    ;; Tile `tile` (and, the first time, the Q tile) has arrived, and every warp
                    ;; is done with the stage refilled next.
                    (cp-async-wait ,(- stages 2))
                    (syncthreads)
                    (let ((ahead (+ tile ,(- stages 1))))
                      (when (< ahead tiles)
                        (at-load-kv ,d ,threads (mod ahead ,stages) ahead))
                      (cp-async-commit))
                    (at-tile ,d ,causal ,mt ,qregs (mod tile ,stages) tile))
                  (cp-async-wait-all)
                  (at-with-inverse-sums ,mt
                    (tc-for-each-accumulator (o ,mt ,(/ d 8)) at-store-o)))))
    `(defkernel ,name (void ((query bfloat16* :restrict) (key bfloat16* :restrict)
                             (value bfloat16* :restrict) (out bfloat16* :restrict)
                             (seq int) (scale-log2 float)))
       (declare (launch-bounds ,threads ,blocks))
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
                  ;; The swizzle's lane terms (at-sw-split): rows lr and kr are lane mod 8
                  ;; modulo 8.
                  (ylc (logxor lc (mod lane 8)))
                  ;; at-copy-tile's row and chunk, and their offsets in a swizzled tile and in
                  ;; the head.
                  (crow (/ tid ,(/ d 8)))
                  (cch (mod tid ,(/ d 8)))
                  (cs-off (at-sw crow cch ,d))
                  (cg-off (+ (* crow ,d) (* 8 cch)))
                  (ykc (logxor kc (mod lane 8)))
                  ;; Causal blocks take their query tiles last to first: the longest first.
                  (q0 (* ,(if causal '(- grid-dim-x 1 block-idx-x) 'block-idx-x) ,rows))
                  (base (* block-idx-y seq ,d))
                  (wr (* warp ,(* 16 mt)))
                  (row-w (+ q0 wr))
                  (row-g (+ row-w g))
                  (ks ,(* rows d))
                  (vs ,(* (+ rows (* 64 stages)) d))
                  (tiles ,(if causal `(/ (+ q0 ,rows) 64) '(/ seq 64)))
                  ,@state)
             ;; Q, then the first stages − 1 K/V tiles, each its own group.
             (at-copy-tile 0 query q0 ,rows ,d ,threads)
             (cp-async-commit)
             ,@(loop for p from 0 below (- stages 1)
                     collect `(progn
                                (when (< ,p tiles) (at-load-kv ,d ,threads ,p ,p))
                                (cp-async-commit)))
             ,(if qregs
                  `(progn
                     (cp-async-wait ,(- stages 1))
                     (syncthreads)
                     (at-with-q-registers ,d ,mt ,main))
                  main)))))))

;;; Two shapes of block, each for d = 128 and 64, causal and not:
;;; * w8: 8 warps of one m16 tile, Q in registers, one block per SM;
;;; * w4: 4 warps of two m16 tiles (FlashAttention-2's 128×64 tiling for sm_90): half the
;;;   K/V ldmatrix traffic per mma, Q reloaded from shared memory, two blocks per SM.
(define-attention attention-d128-w8 128 nil 8 1 t 2 1)
(define-attention attention-d128-w8-causal 128 t 8 1 t 2 1)
(define-attention attention-d128-w4 128 nil 4 2 nil 2 2)
(define-attention attention-d128-w4-causal 128 t 4 2 nil 2 2)
(define-attention attention-d64-w8 64 nil 8 1 t 2 1)
(define-attention attention-d64-w8-causal 64 t 8 1 t 2 1)
(define-attention attention-d64-w4 64 nil 4 2 nil 2 2)
(define-attention attention-d64-w4-causal 64 t 4 2 nil 2 2)

;;;; hgemm-tma: C = A·Bᵀ with BF16 inputs, f32 accumulation and a BF16 result, computed with
;;;; `hgemm`'s instructions (mma.sync m16n8k16 on register fragments that ldmatrix loads) but
;;;; fed by `hgemm-hopper`'s pipeline instead of cp.async: one producer thread streams 64-wide
;;;; K slices of A (128 rows) and B (256 rows) into a ring of four 128-byte-swizzled stages with
;;;; the TMA (`with-gemm-pipeline`, `produce-slice`), and the eight warps of warpgroups 1 and 2
;;;; each multiply a 64×64 warp tile of the 128×256 block tile. Why, from `hgemm`'s
;;;; measurements (BENCHMARKS.md): `hgemm`'s warps meet at a block barrier every k-tile and
;;;; issue their own copies (with their address arithmetic) between their mma; here a warp waits
;;;; only for the slice it needs (the stage's `full` mbarrier) and releases a stage as soon as it
;;;; has loaded the stage's last fragments (one arrival a warp on `empty`), so the eight warps
;;;; drift apart by up to three slices instead of stalling together; and a 128×256 tile reads a
;;;; quarter fewer bytes from the L2 a flop than `hgemm`'s 128×128 (the L2 may be what holds
;;;; `hgemm` back: its copies alone move about 7.3 TB/s).
;;;;
;;;; A is M×K and B is N×K, both row-major (K-major), C is M×N row-major, as `hgemm-hopper`'s;
;;;; the same four schedules (`define-tma-hgemm`): `hgemm-tma`, a block per tile, tile rows of A
;;;; fastest; `-grouped`; `-persistent` (C as BF16 pairs); `-multicast` (persistent, 2-block
;;;; clusters sharing B). `hgemm-tma-nn` and its schedules take B K×N, `hgemm`'s layout (C =
;;;; A·B; the `hgemm` example times them); `hgemm-tma-mma-only-persistent` and
;;;; `-no-mma-persistent` are probes. The program is the tensor-core macro library, the
;;;; examples' prelude, `hgemm-hopper.lisp`, then this file (`workloads::hopper_program`); the
;;;; shape rules are `hgemm-hopper`'s.

;;; A fragment i of the warp's 64 rows at k16 step `kk` of the stage at `a-stage` (rows of 64
;;; BF16, 128-byte swizzled: chunk c of row r at c XOR r mod 8, and r mod 8 = lr mod 8 since the
;;; warp's rows start at multiples of 16): lane l gives row wm + 16 i + l mod 16 at chunk
;;; 2 kk + l / 16, so the four matrices are a0 … a3 of mma.m16n8k16 (as `hgemm`'s).
(defkernelmacro tma-a-fragment (i)
  `(ldmatrix :x4 (pointer (aref a-stage (+ (* (+ wm (* ,i 16) lr) 64)
                                           (* 8 (tc-swizzle (+ (* kk 2) lc) lr 7 0)))))))

;;; B quad j (n8 tiles 2j and 2j + 1) at k16 step `kk`: B's rows are N, K-major, so ldmatrix
;;; without .trans gives mma's B operand: lane l gives row wn + 16 j + br (br = l mod 8 +
;;; 8 (l / 16)) at chunk 2 kk + bc (bc = (l / 8) mod 2), the four matrices being b0, b1 of tile
;;; 2j and b0, b1 of tile 2j + 1 (`tc-b-half`'s order).
(defkernelmacro tma-b-quad (j)
  `(ldmatrix :x4 (pointer (aref b-stage (+ (* (+ wn (* ,j 16) br) 64)
                                           (* 8 (tc-swizzle (+ (* kk 2) bc) br 7 0)))))))

;;; The same quad from an N-major stage (B K×N, `produce-slice … :n-major`: four boxes of 64
;;; columns by 64 rows of K, 128-byte swizzled), transposed by ldmatrix as `hgemm`'s: lane l
;;; gives row 16 kk + l mod 16 of the warp's box (its 64 columns, wn / 64) at chunk 2j + l / 16,
;;; the four matrices again b0, b1 of tile 2j and of tile 2j + 1.
(defkernelmacro tma-b-quad-n-major (j)
  `(ldmatrix :x4 :trans
             (pointer (aref b-stage (+ (* (/ wn 64) 4096) (* (+ (* kk 16) lr) 64)
                                       (* 8 (tc-swizzle (+ (* ,j 2) lc) lr 7 0)))))))

;;; Loads k16 step `step` of stage `s` into register set `set` (tc-with-fragment-sets' fa and bq):
;;; the warp's 4 A fragments and 4 B quads (by `b-quad`, `tma-b-quad` or `tma-b-quad-n-major`).
(defkernelmacro tma-fetch (s step set &optional (b-quad 'tma-b-quad))
  `(let ((a-stage (pointer (aref a-tiles (* ,s 128 64))))
         (b-stage (pointer (aref b-tiles (* ,s 256 64)))))
     (symbol-macrolet ((kk ,step))
       (tc-fetch-set (fa bq ,set 4 4) tma-a-fragment ,b-quad))))

;;; The 32 mma.sync of one k16 step from register set `set`.
(defkernelmacro tma-mma (set)
  `(tc-mma-set (:m16n8k16 :bf16) acc fa bq ,set 4 4))

;;; Waits until the block's `it`-th slice is in its stage.
(defkernelmacro wait-slice (it)
  `(mbarrier-wait (pointer (aref full (mod ,it stages))) (mod (/ ,it stages) 2)))

;;; The warp's release of stage `s`: once all its lanes have passed their ldmatrix of the stage
;;; (syncwarp orders them before lane 0's arrival), one arrival on `empty`, and on the `empty`
;;; of the cluster's block of rank `peer` when given (whose producer writes half of B here).
;;; With `async-writer` (the TMA refills the stage), each lane first orders its ldmatrix reads
;;; (generic proxy) before the TMA's writes (async proxy) with `fence-proxy-async`: the
;;; mbarrier alone does not bridge the proxies, and without the fence the persistent kernels
;;; read a refilled stage now and then (H100, 2026-12-06: 3 to 5 wrong entries of 2048).
(defkernelmacro release-warp (s peer async-writer)
  `(progn
     ,@(if async-writer '((fence-proxy-async)))
     (syncwarp)
     (when (= lane 0)
       (mbarrier-arrive (pointer (aref empty ,s)))
       ,@(if peer `((mbarrier-arrive-cluster (pointer (aref empty ,s)) ,peer))))))

;;; The warp's main loop over one tile's `slices` K slices, the first the block's `it`-th, in
;;; tc-pipeline-fragments' order, steps 0 and 2 in set 0, 1 and 3 in set 1: every k16 step
;;; fetches the next step's fragments before its own 32 mma, and a slice's last step first
;;; releases the stage (its fragments are all in registers by then), waits for the next slice
;;; and fetches that slice's first step, then multiplies.
;;; Leaves `it` past the tile's slices. `b-quad` as `tma-fetch`'s; a probe replaces `fetch`
;;; (`tma-fetch`) or `mma` (`tma-mma`), kernel macros of the same arguments; `async-writer` nil
;;; when cp.async (the generic proxy) refills the stages (`release-warp`).
(defkernelmacro consume-tile (it slices peer b-quad
                              &key (fetch 'tma-fetch) (mma 'tma-mma) (async-writer t))
  `(progn
     (wait-slice ,it)
     (,fetch (mod ,it stages) 0 0 ,b-quad)
     (for (kb 0 (< kb ,slices) (+ kb 1))
       (let ((s (mod ,it stages)))
         (,fetch s 1 1 ,b-quad)
         (,mma 0)
         (,fetch s 2 0 ,b-quad)
         (,mma 1)
         (,fetch s 3 1 ,b-quad)
         (,mma 0)
         (release-warp s ,peer ,async-writer)
         (when (< (+ kb 1) ,slices)
           (wait-slice (+ ,it 1))
           (,fetch (mod (+ ,it 1) stages) 0 0 ,b-quad))
         (,mma 1)
         (set ,it (+ ,it 1))))))

;;; The probes' stand-ins (`define-tma-hgemm`'s :probe): no fragment loads (`mma-only`), and,
;;; for `no-mma`, one word of each fragment of register set `set` folded into `sink` instead of
;;; its 32 mma (so that ptxas keeps the ldmatrix no mma reads).
(defkernelmacro tma-no-fetch (s step set b-quad)
  '(progn))

(defkernelmacro tma-sink (set)
  `(tc-fold-set sink (fa bq ,set 4 4)))

;;; The epilogue of accumulator (i, j) into C as BF16: rows g and g + 8 of m16 tile i, columns
;;; 2q and 2q + 1 of n8 tile j of the warp tile at (m0 + wm, n0 + wn).
(defkernelmacro tma-store (i j v)
  `(tc-store-bf16 c (+ (* (+ m0 wm (* ,i 16) g) n) n0 wn (* ,j 8) (* 2 q)) n ,v))

;;; The same into C as 32-bit words of two BF16 (`uint*`, the lower column in the lower half):
;;; one store a row instead of two.
(defkernelmacro tma-store-pair (i j v)
  `(let ((p (/ (+ (* (+ m0 wm (* ,i 16) g) n) n0 wn (* ,j 8) (* 2 q)) 2)))
     (set (aref c p) (pack-bf16x2 (float4-x ,v) (float4-y ,v)))
     (set (aref c (+ p (* 4 n))) (pack-bf16x2 (float4-z ,v) (float4-w ,v)))))

;;; Binds what consumer warp `warp` (0-7) and its lane `lane` need around body: `lane`; `wm`
;;; and `wn`, where its 64×64 warp tile starts in the block tile (rows 64 (warp / 4), columns
;;; 64 (warp mod 4)); `g` and `q`, the lane's row and column pair in an accumulator; `lr` and
;;; `lc`, its row and chunk in A's ldmatrix (and B's, N-major); with `k-major-b` (kernels that
;;; load a K-major B), `br` and `bc`, the same for B's ldmatrix.
(defkernelmacro with-consumer-warp ((warp lane k-major-b) &body body)
  `(let* ((lane ,lane)
          (w ,warp)
          (wm (* (/ w 4) 64))
          (wn (* (mod w 4) 64))
          (g (/ lane 4))
          (q (mod lane 4))
          (lr (mod lane 16))
          (lc (/ lane 16))
          ,@(if k-major-b
                '((br (+ (mod lane 8) (* 8 (/ lane 16))))
                  (bc (mod (/ lane 8) 2)))
                '()))
     ,@body))

;;; The cp.async producer's step (`define-tma-hgemm … :producer cp-async`) for the block's
;;; `it`-th slice, slice `kb` of the tile at (m0, n0): each of the producer warpgroup's 128
;;; threads waits until the consumers released the stage's previous slice, copies its share
;;; (`copy-slice-data`) and arrives on `full` once its copies have landed
;;; (`cp-async-mbarrier-arrive`; `full` then expects 128 arrivals).
(defkernelmacro copy-slice (it kb m0 n0 n-major)
  `(let ((s (mod ,it stages)))
     (when (>= ,it stages)
       (mbarrier-wait (pointer (aref empty s)) (mod (- (/ ,it stages) 1) 2)))
     (copy-slice-data s ,kb ,m0 ,n0 ,n-major)
     (cp-async-mbarrier-arrive (pointer (aref full s)))))

;;; Thread `tid` (0-127) of the producer warpgroup issues its 24 of the 3072 16-byte copies of
;;; slice `kb` of the tile at (m0, n0) into stage `s`, each where the TMA would have put it
;;; (128-byte swizzled rows of 64 BF16; with `n-major`, B K×N in four boxes of 64 columns):
;;; 8 of A and 16 of B. Consecutive threads copy consecutive chunks of a row. The sources walk
;;; with a running pointer, so that ptxas keeps one address a matrix, not one a copy (with
;;; one each, the producer spilled even with 72 registers; this way 40 suffice).
(defkernelmacro copy-slice-data (s kb m0 n0 n-major)
  `(progn
     ;; A: chunk tid mod 8 of rows tid / 8 + 16 part (the swizzle, row mod 8, is the same for
     ;; every part).
     (let ((src (pointer (aref a (+ (* (+ ,m0 (/ tid 8)) k) (* ,kb 64) (* 8 (mod tid 8))))))
           (dst (pointer (aref a-tiles (+ (* ,s 128 64) (* (/ tid 8) 64)
                                          (* 8 (tc-swizzle (mod tid 8) (/ tid 8) 7 0)))))))
       (unroll (part 0 1 8)
         (cp-async (pointer (aref dst (* part 1024))) src 16)
         (set src (pointer (aref src (* 16 k))))))
     ,(if n-major
          ;; B K×N: 8-column chunk tid mod 32 (of the tile's 256 columns, in box (tid mod 32) /
          ;; 8) of rows tid / 32 + 4 part of the slice's 64 rows of K.
          `(let ((src (pointer (aref b (+ (* (+ (* ,kb 64) (/ tid 32)) n) ,n0
                                          (* 8 (mod tid 32))))))
                 (dst (pointer (aref b-tiles (+ (* ,s 256 64) (* (/ (mod tid 32) 8) 4096)
                                                (* (/ tid 32) 64))))))
             (unroll (part 0 1 16)
               (cp-async (pointer (aref dst (+ (* part 256)
                                               (* 8 (tc-swizzle (mod tid 8)
                                                                (+ (/ tid 32) (* 4 part)) 7 0)))))
                         src 16)
               (set src (pointer (aref src (* 4 n))))))
          ;; B N×K: as A, 16 rows of N a part.
          `(let ((src (pointer (aref b (+ (* (+ ,n0 (/ tid 8)) k) (* ,kb 64) (* 8 (mod tid 8))))))
                 (dst (pointer (aref b-tiles (+ (* ,s 256 64) (* (/ tid 8) 64)
                                                (* 8 (tc-swizzle (mod tid 8) (/ tid 8) 7 0)))))))
             (unroll (part 0 1 16)
               (cp-async (pointer (aref dst (* part 1024))) src 16)
               (set src (pointer (aref src (* 16 k)))))))))

;;; Runs body for each tile of C the block computes, with m0 and n0 its first row and column:
;;; `schedule` :rows, the one tile (block-idx-x, block-idx-y) of a 2-D grid; :grouped, tile
;;; block-idx-x in grouped order (`with-tile`); :persistent, tiles block-idx-x, block-idx-x +
;;; grid-dim-x, … in grouped order.
(defkernelmacro for-each-block-tile ((m0 n0) schedule &body body)
  (cond ((eq schedule :rows)
         `(let ((,m0 (* block-idx-x 128))
                (,n0 (* block-idx-y 256)))
            ,@body))
        ((eq schedule :grouped)
         `(with-tile (,m0 ,n0) block-idx-x tiles-m tiles-n ,@body))
        (t
         `(for (tile block-idx-x (< tile tiles) (+ tile grid-dim-x))
            (with-tile (,m0 ,n0) tile tiles-m tiles-n ,@body)))))

;;; (define-tma-hgemm name schedule &key multicast n-major): the kernel `name`, 384 threads
;;; (warpgroup 0 the producer, warpgroups 1 and 2 eight mma.sync warps), `hgemm-hopper`'s maps
;;; and launch (`HopperSchedule`): `schedule` as `for-each-block-tile`'s; the persistent
;;; schedule stores C as BF16 pairs (`uint*`) and, with :multicast t, runs in 2-block clusters
;;; sharing B as `define-hopper-gemm-persistent`'s (each warp then releases a stage in both
;;; blocks). With :n-major t, B is K×N (N innermost, `hgemm`'s layout: C = A·B), loaded in
;;; boxes of 64 columns (`HopperMaps::with_n_major_b`) and read with ldmatrix .trans.
;;;
;;; With `:producer cp-async`, the producer is all of warpgroup 0 copying with cp.async
;;; (`copy-slice`) instead of one thread driving the TMA: the kernel then takes A and B as
;;; `bfloat16*` (no tensor maps), and has no multicast. It is `hgemm`'s cp.async, only issued
;;; by warps that do nothing else.
;;;
;;; A probe leaves work out to place the time of the rest, as `define-hgemm`'s (its result is
;;; wrong; the examples time it and do not check it): `:probe mma-only`, the pipeline (TMA,
;;; waits, releases) and the mma.sync on register fragments of BF16 values in [1, 1.25) that
;;; vary by lane, but no ldmatrix; `:probe no-mma`, the pipeline and the ldmatrix, no mma.
(defkernelmacro define-tma-hgemm (name schedule &key multicast n-major probe (producer 'tma))
  (unless (member probe '(nil mma-only no-mma))
    (error "define-tma-hgemm: :probe is mma-only or no-mma, not ~a" probe))
  (unless (member producer '(tma cp-async))
    (error "define-tma-hgemm: :producer is tma or cp-async, not ~a" producer))
  (when (and multicast (eq producer 'cp-async))
    (error "define-tma-hgemm: only the TMA multicasts (:producer cp-async with :multicast)"))
  (let ((peer (if multicast '(logxor rank 1) nil))
        (pairs (eq schedule :persistent))
        (b-quad (if n-major 'tma-b-quad-n-major 'tma-b-quad))
        (word (if (eq probe 'mma-only)
                  '(uint (logior #x3f803f80 (logand (* lane #x00050003) #x001f001f)))
                  0)))
    `(defkernel ,name (void (,@(if (eq producer 'tma)
                                   '((a-map tensor-map) (b-map tensor-map))
                                   '((a bfloat16* :restrict) (b bfloat16* :restrict)))
                             (c ,(if pairs 'uint* 'bfloat16*))
                             (m int) (n int) (k int)))
       (declare (launch-bounds 384 1))
       (with-gemm-pipeline (bfloat16 64 :paired ,(and multicast t) :releasers 8
                                     :producers ,(if (eq producer 'tma) 1 128))
         (let* (,@(if (eq schedule :rows)
                      '()
                      '((tiles-m (/ m 128))
                        (tiles-n (/ n 256))))
                ,@(if pairs '((tiles (* tiles-m tiles-n))))
                ,@(if multicast '((rank (int (cluster-rank)))))
                (it 0))                         ; slices of the block so far
           (if (= warpgroup 0)
               ;; The producer.
               (progn
                 (setmaxnreg-dec 40)
                 ,(if (eq producer 'tma)
                      `(when (= tid 0)
                         (for-each-block-tile (m0 n0) ,schedule
                           (for (kb 0 (< kb slices) (+ kb 1))
                             (produce-slice it kb m0 n0 64 :n-major ,n-major
                                            ,@(if multicast '(:rank rank)))
                             (set it (+ it 1)))))
                      `(for-each-block-tile (m0 n0) ,schedule
                         (for (kb 0 (< kb slices) (+ kb 1))
                           (copy-slice it kb m0 n0 ,n-major)
                           (set it (+ it 1))))))
               ;; Consumer warp w (0-7) owns the 64×64 warp tile at rows 64 (w / 4), columns
               ;; 64 (w mod 4) of the block tile.
               (progn
                 (setmaxnreg-inc 232)
                 (with-consumer-warp ((+ (* (- warpgroup 1) 4) (/ tid 32)) (mod tid 32)
                                      ,(not (or n-major (eq probe 'mma-only))))
                   ,(let ((tiles
                            `(for-each-block-tile (m0 n0) ,schedule
                               (tc-with-accumulators (acc 4 8)
                                 (tc-with-fragment-sets (fa bq 4 4 ,word)
                                   (consume-tile it slices ,peer ,b-quad
                                                 :async-writer ,(eq producer 'tma)
                                                 ,@(if (eq probe 'mma-only)
                                                       '(:fetch tma-no-fetch))
                                                 ,@(if (eq probe 'no-mma) '(:mma tma-sink))))
                                 (tc-for-each-accumulator
                                  (acc 4 8) ,(if pairs 'tma-store-pair 'tma-store))))))
                      (if (eq probe 'no-mma)
                          `(let ((sink (uint 0)))
                             ,tiles
                             ;; A store that depends on every fragment loaded (never taken).
                             (when (= sink #xffffffff)
                               (set (aref c 0) ,(if pairs '(uint 0) '(float-to-bfloat16 0.0)))))
                          tiles)))))
           ;; No block leaves while its peer may still write to it or arrive on its barriers.
           ,@(if multicast '((cluster-barrier))))))))

(define-tma-hgemm hgemm-tma :rows)
(define-tma-hgemm hgemm-tma-grouped :grouped)
(define-tma-hgemm hgemm-tma-persistent :persistent)
(define-tma-hgemm hgemm-tma-multicast :persistent :multicast t)
(define-tma-hgemm hgemm-tma-nn :rows :n-major t)
(define-tma-hgemm hgemm-tma-nn-grouped :grouped :n-major t)
(define-tma-hgemm hgemm-tma-nn-persistent :persistent :n-major t)
(define-tma-hgemm hgemm-tma-nn-multicast :persistent :multicast t :n-major t)
(define-tma-hgemm hgemm-ws-nn :rows :n-major t :producer cp-async)
(define-tma-hgemm hgemm-ws-nn-grouped :grouped :n-major t :producer cp-async)
(define-tma-hgemm hgemm-ws-nn-persistent :persistent :n-major t :producer cp-async)
(define-tma-hgemm hgemm-tma-mma-only-persistent :persistent :probe mma-only)
(define-tma-hgemm hgemm-tma-no-mma-persistent :persistent :probe no-mma)

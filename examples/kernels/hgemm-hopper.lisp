;;;; C = A·Bᵀ with f32 accumulation on Hopper's tensor cores (sm_90a), BF16 in (`hgemm-hopper`)
;;;; or FP8 E4M3 in (`fp8-gemm`), BF16 out: A is M×K and B is N×K, both row-major (K innermost,
;;;; "K-major"), C is M×N row-major. Every kernel here comes from one skeleton written as
;;;; kernel macros (`with-gemm-pipeline`, `produce-slice`, `consume-slice`).
;;;;
;;;; One block computes a 128×256 tile of C with three warpgroups (384 threads):
;;;; * warpgroup 0, the producer, gives its registers back (setmaxnreg-dec 40) and one of its
;;;;   threads streams 128-byte K slices (64 BF16 or 128 FP8) of A (128 rows) and B (256 rows)
;;;;   into shared memory with TMA, 128-byte swizzled, through a ring of `stages` buffers: it
;;;;   waits for a buffer's `empty` mbarrier, announces the bytes on its `full` mbarrier and
;;;;   starts both copies;
;;;; * warpgroups 1 and 2, the consumers, take more registers (setmaxnreg-inc 232) and each
;;;;   own 64 rows of the tile in one m64n256 f32 accumulator (128 registers a thread): for
;;;;   every slice they wait for `full`, issue four wgmma m64n256k16 (k32 for FP8) straight from
;;;;   the swizzled buffers (shared-memory descriptors, 32 bytes further along K each), commit,
;;;;   wait, and release the buffer (while one consumer waits, the other's wgmmas run);
;;;; * the epilogue converts the accumulators to BF16 and stores them.
;;;;
;;;; Four schedules of that block (the examples time each): `define-hopper-gemm` makes a block
;;;; per tile, in a 2-D grid (`hgemm-hopper`) or in grouped order (`-grouped`);
;;;; `define-hopper-gemm-persistent` makes persistent blocks whose pipeline runs across tiles,
;;;; each consumer keeping one slice's wgmmas in flight (`-persistent`), and the same in
;;;; 2-block clusters that share B through the TMA's multicast (`-multicast`).
;;;; M must be a multiple of 128 (256 for `-multicast`), N of 256, K of one slice (64 BF16,
;;;; 128 FP8: the maps' boxes).

;;; The pipeline's depth, and the bytes of one stage: a 128-row A and a 256-row B slice of
;;; 128 bytes a row, whatever the element type.
(defkernel-symbol-macro stages 4)
(defkernel-symbol-macro stage-bytes (* (+ 128 256) 128))

;;; The descriptor of a K-major, 128-byte-swizzled tile at `tile` (a 1024-byte aligned run of
;;; 128-byte rows): 8-row groups 1024 bytes apart (the stride), the leading offset unused by
;;; swizzled K-major layouts (16 by convention), and `k` elements further along K.
(defkernelmacro k-major-sw128 (tile k)
  `(wgmma-descriptor (pointer (aref ,tile ,k)) 16 1024 128))

;;; Four wgmmas (`mma`, K = `mma-k` elements each) over one 128-byte K slice.
(defkernelmacro mma-slice (mma mma-k acc a b)
  `(unroll (kk 0 1 4)
     (,mma (pointer ,acc) (k-major-sw128 ,a (* kk ,mma-k)) (k-major-sw128 ,b (* kk ,mma-k)) 1)))

;;; The element of C (row-major, `n` columns) that register i of the accumulator holds, for
;;; thread `tid` of a warpgroup whose 64×256 tile starts at (row0, col0): PTX's m64nN f32
;;; fragment layout.
(defkernelmacro accumulator-element (i row0 col0 tid)
  `(+ (* (+ ,row0 (* 16 (/ ,tid 32)) (/ (mod ,tid 32) 4) (* 8 (mod (/ ,i 2) 2))) n)
      ,col0 (* 8 (/ ,i 4)) (* 2 (mod ,tid 4)) (mod ,i 2)))

;;; Stores register i of the accumulator as BF16.
(defkernelmacro store-register (acc i row0 col0 tid)
  `(set (aref c (accumulator-element ,i ,row0 ,col0 ,tid))
        (float-to-bfloat16 (wgmma-acc-ref ,acc ,i))))

;;; Stores registers i and i + 1 (i even: adjacent columns of one row) as one packed pair of
;;; BF16 into `c`, C viewed as 32-bit words (`uint*`, two columns a word): half the store
;;; instructions of `store-register`.
(defkernelmacro store-pair (acc i row0 col0 tid)
  `(set (aref c (/ (accumulator-element ,i ,row0 ,col0 ,tid) 2))
        (pack-bf16x2 (wgmma-acc-ref ,acc ,i) (wgmma-acc-ref ,acc (+ ,i 1)))))

;;; The pipeline's shared state around `body`: the `full` and `empty` mbarriers of every stage
;;; (initialised), the stage buffers `a-tiles` and `b-tiles` in dynamic shared memory from its
;;; first 1024-byte boundary (the 128-byte swizzle repeats every 1024 bytes; the launch adds
;;; 1024 bytes for this), the thread's `warpgroup` and `tid` in it, and `slices`, the K slices
;;; of one tile. A stage is full once its `producers` arrivals came (one, by default: the
;;; producer's, with the TMA's bytes) and free once each of the block's `releasers` consumers
;;; (its two consumer warpgroups, by default) released it; with `paired`, the block is one of
;;; a cluster of two that share B: a stage is then free once the consumers of both blocks
;;; released it (twice as many arrivals on `empty`), and the barriers are made visible to the
;;; peer before either block starts.
(defkernelmacro with-gemm-pipeline ((element slice-k &key paired (releasers 2) (producers 1))
                                    &body body)
  `(with-shared-memory ((full uint64 4)
                        (empty uint64 4))
     (with-dynamic-shared-memory ((raw ,element))
       (let* ((pad (logand (- 1024 (logand (shared-address raw) 1023)) 1023))
              (a-tiles (pointer (aref raw (/ pad ,(/ 128 slice-k)))))
              (b-tiles (pointer (aref a-tiles (* stages 128 ,slice-k))))
              (warpgroup (/ thread-idx-x 128))
              (tid (mod thread-idx-x 128))
              (slices (/ k ,slice-k)))
         (when (= thread-idx-x 0)
           (unroll (s 0 1 4)                    ; every stage
             (mbarrier-init (pointer (aref full s)) ,producers)
             (mbarrier-init (pointer (aref empty s)) ,(if paired (* 2 releasers) releasers)))
           ,@(if paired '((fence-mbarrier-init))))
         ,(if paired '(cluster-barrier) '(syncthreads))
         ,@body))))

;;; The producer's step for the `it`-th slice the block loads (counting over all its tiles):
;;; slice `kb` of the tile at rows m0 of A and n0 of B. It waits until the consumers released
;;; the stage's previous slice, announces the stage's bytes on `full` and starts both copies.
;;; With `rank`, the block's rank in a cluster of two sharing B (whose map's box is then 128
;;; rows), it loads half of B, rows 128 rank …, into both blocks' stage (multicast): the
;;; peer's half completes on this block's `full` as this block's half on the peer's.
;;;
;;; With `n-major`, B is K×N, N innermost (`hgemm`'s layout; `hgemm-tma-nn` reads it with
;;; ldmatrix .trans): its map's box is slice-k columns (128 bytes) by slice-k rows of K, and the
;;; stage holds the tile's 256 columns as 256 / slice-k such boxes one after the other (half of
;;; them, from column 128 rank, loaded by each block of a pair).
(defkernelmacro produce-slice (it kb m0 n0 slice-k &key rank n-major)
  `(let ((s (mod ,it stages)))
     (when (>= ,it stages)
       (mbarrier-wait (pointer (aref empty s)) (mod (- (/ ,it stages) 1) 2)))
     (mbarrier-arrive-expect-tx (pointer (aref full s)) stage-bytes)
     (tma-load-2d (pointer (aref a-tiles (* s 128 ,slice-k)))
                  (pointer (aref full s)) (pointer a-map) (* ,kb ,slice-k) ,m0)
     ,(cond (n-major
             `(unroll (box 0 1 ,(/ (if rank 128 256) slice-k))
                (let ((column (+ ,@(if rank `((* ,rank 128)) '()) (* box ,slice-k))))
                  (,(if rank 'tma-load-2d-multicast 'tma-load-2d)
                   (pointer (aref b-tiles (+ (* s 256 ,slice-k) (* column ,slice-k))))
                   (pointer (aref full s)) (pointer b-map) ,@(if rank '(3) '())
                   (+ ,n0 column) (* ,kb ,slice-k)))))
            (rank
             `(tma-load-2d-multicast
               (pointer (aref b-tiles (+ (* s 256 ,slice-k) (* ,rank 128 ,slice-k))))
               (pointer (aref full s)) (pointer b-map) 3 (* ,kb ,slice-k) (+ ,n0 (* ,rank 128))))
            (t
             `(tma-load-2d (pointer (aref b-tiles (* s 256 ,slice-k)))
                           (pointer (aref full s)) (pointer b-map) (* ,kb ,slice-k) ,n0)))))

;;; Releases stage `s` of the ring: one arrival of this consumer warpgroup on `empty`, and on
;;; the `empty` of the block of rank `peer` of the cluster when given (its producer writes into
;;; this block's stage too).
(defkernelmacro release-stage (s peer)
  `(when (= tid 0)
     (mbarrier-arrive (pointer (aref empty ,s)))
     ,@(if peer `((mbarrier-arrive-cluster (pointer (aref empty ,s)) ,peer)))))

;;; A consumer's step for the `it`-th slice, the `kb`-th of its tile: wait for it, four wgmmas
;;; of its `rows` of A against all of B into `acc`, then either wait for them and release the
;;; stage, or, with `overlap`, leave them running (wait-group 1: the previous slice's are then
;;; done) and release the previous slice's stage; `finish-slices` ends an overlapped tile.
;;; (ptxas 13.0 keeps the overlapped wgmmas asynchronous: no C7514 serialisation; it injects
;;; one wait where the epilogue reads the accumulator, C7517, where `finish-slices` waits.)
(defkernelmacro consume-slice (it kb acc rows mma mma-k slice-k &key peer overlap)
  `(let ((s (mod ,it stages)))
     (mbarrier-wait (pointer (aref full s)) (mod (/ ,it stages) 2))
     (wgmma-fence)
     (let ((a (pointer (aref a-tiles (+ (* s 128 ,slice-k) (* ,rows ,slice-k)))))
           (b (pointer (aref b-tiles (* s 256 ,slice-k)))))
       (mma-slice ,mma ,mma-k ,acc a b))
     (wgmma-commit-group)
     ,@(if overlap
           `((wgmma-wait-group 1)
             (when (> ,kb 0)
               (release-stage (mod (- ,it 1) stages) ,peer)))
           `((wgmma-wait-group 0)
             (release-stage s ,peer)))))

;;; After an overlapped tile whose last slice was the `it`-th: waits for its wgmmas and
;;; releases its stage.
(defkernelmacro finish-slices (it peer)
  `(progn
     (wgmma-wait-group 0)
     (release-stage (mod ,it stages) ,peer)))

;;; Rows of tiles per group in the persistent kernels' walk over C: the blocks running at once
;;; (132 on an H200) then cover about 16 × 8 tiles, reading 16 panels of A and 8 of B (about
;;; 64 MiB at 8192³, near L2's 50 MiB) where the row-by-row order reads all 64 panels of A
;;; (128 MiB) for every two columns of tiles.
(defkernel-symbol-macro group-rows 16)

;;; Binds m0 and n0 to the first row and column of tile number `tile` of C, counting tiles in
;;; groups of `group-rows` rows of tiles, column by column within a group (Triton's grouped
;;; ordering), then runs body.
(defkernelmacro with-tile ((m0 n0) tile tiles-m tiles-n &body body)
  `(let* ((in-group (* group-rows ,tiles-n))
          (first-m (* (/ ,tile in-group) group-rows))
          (rows-here (min (- ,tiles-m first-m) group-rows))
          (r (mod ,tile in-group))
          (,m0 (* 128 (+ first-m (mod r rows-here))))
          (,n0 (* 256 (/ r rows-here))))
     ,@body))

;;; (define-hopper-gemm name element slice-k mma mma-k [order]): the kernel `name` over inputs
;;; of `element` (`slice-k` of them in 128 bytes), multiplying with `mma` (K = `mma-k`). One
;;; block per 128×256 tile of C: with `order` :rows (the default), a grid of (M/128, N/256),
;;; the tile rows of A fastest; with :grouped, a grid of M/128 · N/256 blocks in grouped
;;; order (`with-tile`).
(defkernelmacro define-hopper-gemm (name element slice-k mma mma-k &optional (order :rows))
  `(defkernel ,name (void ((a-map tensor-map) (b-map tensor-map) (c bfloat16*)
                           (m int) (n int) (k int)))
     (declare (launch-bounds 384 1))
     (with-gemm-pipeline (,element ,slice-k)
       (,@(if (eq order :grouped)
              '(with-tile (m0 n0) block-idx-x (/ m 128) (/ n 256))
              '(let ((m0 (* block-idx-x 128))
                     (n0 (* block-idx-y 256)))))
         (if (= warpgroup 0)
             ;; The producer.
             (progn
               (setmaxnreg-dec 40)
               (when (= tid 0)
                 (for (kb 0 (< kb slices) (+ kb 1))
                   (produce-slice kb kb m0 n0 ,slice-k))))
             ;; The consumers: warpgroup w owns rows 64 (w - 1) … of the tile.
             (progn
               (setmaxnreg-inc 232)
               (let ((acc (wgmma-f32-m64n256))
                     (rows (* (- warpgroup 1) 64)))
                 (for (kb 0 (< kb slices) (+ kb 1))
                   (consume-slice kb kb acc rows ,mma ,mma-k ,slice-k))
                 (wgmma-fence-operand (pointer acc))
                 (unroll (i 0 1 128)
                   (store-register acc i (+ m0 rows) n0 tid)))))))))

;;; (define-hopper-gemm-persistent name element slice-k mma mma-k [multicast]): the same
;;; product by a persistent kernel: a grid of one block per multiprocessor, each block walking
;;; the tiles block-idx-x, block-idx-x + grid-dim-x, … in grouped order, its pipeline running
;;; on from one tile to the next (the producer loads the next tile's first slices while the
;;; consumers store the last one), and each consumer keeps one slice's wgmmas running while it
;;; issues the next (`consume-slice … :overlap`). C is `uint*`, BF16 pairs (`store-pair`).
;;;
;;; With `multicast` (:multicast), the grid is launched in clusters of two blocks and must be
;;; even, as M / 128 must: blocks 2c and 2c + 1 then walk tiles 2p and 2p + 1, the two halves of
;;; a 256×256 tile in grouped order (same columns of C, `with-tile`'s groups having an even
;;; number of rows), and each loads its own A but only half of the shared B, multicast into
;;; both: a third less traffic from L2 per tile.
(defkernelmacro define-hopper-gemm-persistent (name element slice-k mma mma-k &optional multicast)
  `(defkernel ,name (void ((a-map tensor-map) (b-map tensor-map) (c uint*)
                           (m int) (n int) (k int)))
     (declare (launch-bounds 384 1))
     (with-gemm-pipeline (,element ,slice-k :paired ,(eq multicast :multicast))
       (let* ((tiles-m (/ m 128))
              (tiles-n (/ n 256))
              (tiles (* tiles-m tiles-n))
              ,@(if multicast '((rank (int (cluster-rank)))))
              (it 0))                           ; slices of the block so far
         (if (= warpgroup 0)
             (progn
               (setmaxnreg-dec 40)
               (when (= tid 0)
                 (for (tile block-idx-x (< tile tiles) (+ tile grid-dim-x))
                   (with-tile (m0 n0) tile tiles-m tiles-n
                     (for (kb 0 (< kb slices) (+ kb 1))
                       (produce-slice it kb m0 n0 ,slice-k ,@(if multicast '(:rank rank)))
                       (set it (+ it 1)))))))
             (progn
               (setmaxnreg-inc 232)
               (let ((rows (* (- warpgroup 1) 64)))
                 (for (tile block-idx-x (< tile tiles) (+ tile grid-dim-x))
                   (with-tile (m0 n0) tile tiles-m tiles-n
                     (let ((acc (wgmma-f32-m64n256)))
                       (for (kb 0 (< kb slices) (+ kb 1))
                         (consume-slice it kb acc rows ,mma ,mma-k ,slice-k :overlap t
                                        ,@(if multicast '(:peer (logxor rank 1))))
                         (set it (+ it 1)))
                       (finish-slices (- it 1) ,(if multicast '(logxor rank 1)))
                       (wgmma-fence-operand (pointer acc))
                       (unroll (i 0 2 128)
                         (store-pair acc i (+ m0 rows) n0 tid))))))))
         ;; No block leaves while its peer may still write to it or arrive on its barriers.
         ,@(if multicast '((cluster-barrier)))))))

(define-hopper-gemm hgemm-hopper bfloat16 64 wgmma-mma-async-bf16 16)
(define-hopper-gemm fp8-gemm fp8 128 wgmma-mma-async-e4m3 32)
(define-hopper-gemm hgemm-hopper-grouped bfloat16 64 wgmma-mma-async-bf16 16 :grouped)
(define-hopper-gemm fp8-gemm-grouped fp8 128 wgmma-mma-async-e4m3 32 :grouped)
(define-hopper-gemm-persistent hgemm-hopper-persistent bfloat16 64 wgmma-mma-async-bf16 16)
(define-hopper-gemm-persistent fp8-gemm-persistent fp8 128 wgmma-mma-async-e4m3 32)
(define-hopper-gemm-persistent hgemm-hopper-multicast bfloat16 64 wgmma-mma-async-bf16 16
  :multicast)
(define-hopper-gemm-persistent fp8-gemm-multicast fp8 128 wgmma-mma-async-e4m3 32 :multicast)

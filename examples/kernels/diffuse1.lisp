;;;; One step of the 2-D heat equation, cl-cuda's diffuse1: each 16×16 block stages its cells and
;;;; a one-cell halo in a shared 18×18 tile, then applies the same stencil as diffuse0 from shared
;;;; memory; it gives the same field, bit for bit. The edge threads load the halo; at the domain's
;;;; edge (decided by block index) the halo takes the centre value (Neumann boundaries).
;;;; Launch (nx/16, ny/16) blocks of (16, 16) threads.

(defkernel diffuse1 (void ((f float* :restrict) (fn float* :restrict) (nx int) (ny int)
                           (c0 float) (c1 float) (c2 float)))
  (declare (launch-bounds 256))
  (let* ((jx (+ thread-idx-x 1))
         (jy (+ thread-idx-y 1))
         (j (+ (* nx (+ (* block-dim-y block-idx-y) thread-idx-y))
               (* block-dim-x block-idx-x)
               thread-idx-x))
         (fcc (aref f j)))
    (with-shared-memory ((fs float 18 18))
      (set (aref fs jy jx) fcc)
      (when (= thread-idx-x 0)
        (set (aref fs jy 0)
             (if (= block-idx-x 0) fcc (aref f (- j 1)))))
      (when (= thread-idx-x (- block-dim-x 1))
        (set (aref fs jy (+ jx 1))
             (if (= block-idx-x (- grid-dim-x 1)) fcc (aref f (+ j 1)))))
      (when (= thread-idx-y 0)
        (set (aref fs 0 jx)
             (if (= block-idx-y 0) fcc (aref f (- j nx)))))
      (when (= thread-idx-y (- block-dim-y 1))
        (set (aref fs (+ jy 1) jx)
             (if (= block-idx-y (- grid-dim-y 1)) fcc (aref f (+ j nx)))))
      (syncthreads)
      (set (aref fn j) (+ (* c0 (+ (aref fs jy (+ jx 1)) (aref fs jy (- jx 1))))
                          (* c1 (+ (aref fs (+ jy 1) jx) (aref fs (- jy 1) jx)))
                          (* c2 (aref fs jy jx)))))))

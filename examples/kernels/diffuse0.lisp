;;;; One step of the 2-D heat equation, cl-cuda's diffuse0: a 5-point stencil read straight from
;;;; global memory. Neumann boundaries: a neighbour beyond the edge takes the centre value.
;;;; fn = (c0·(fe + fw) + c1·(fn + fs)) + c2·fc, cell j = nx·jy + jx. nx must be a multiple of the
;;;; block width; launch (nx/bx, ny) blocks of (bx, 1) threads.

(defkernel diffuse0 (void ((f float* :restrict) (fn float* :restrict) (nx int) (ny int)
                           (c0 float) (c1 float) (c2 float)))
  (declare (launch-bounds 256))
  (let* ((jx (+ (* block-dim-x block-idx-x) thread-idx-x))
         (jy (+ (* block-dim-y block-idx-y) thread-idx-y))
         (j (+ (* nx jy) jx))
         (fcc (aref f j))
         (fcw (if (= jx 0) fcc (aref f (- j 1))))
         (fce (if (= jx (- nx 1)) fcc (aref f (+ j 1))))
         (fcs (if (= jy 0) fcc (aref f (- j nx))))
         (fcn (if (= jy (- ny 1)) fcc (aref f (+ j nx)))))
    (set (aref fn j) (+ (* c0 (+ fce fcw))
                        (* c1 (+ fcn fcs))
                        (* c2 fcc)))))

;;;; Smoothed-particle hydrodynamics, cl-cuda's sph example: a dam of fluid collapsing in a box.
;;;; One step is nine launches: clear the neighbour grid's counts, bin the particles into cells
;;;; (atomic counts), density (poly6 kernel), pressure, force (spiky pressure gradient + viscosity
;;;; Laplacian), acceleration, boundary penalty walls and acceleration limit, velocity, position.
;;;; Positions, velocities, forces and accelerations are float4 with w = 0.
;;;; The neighbour grid: cell (i,j,k) = floor((x - origin)/delta); count[cell] particles, stored in
;;;; map[cell·capacity + l]. Unlike cl-cuda, a full cell drops further particles instead of
;;;; overwriting the next cell.

;;; Physical parameters (cl-cuda's values).
(defkernel-symbol-macro h 0.005)
(defkernel-symbol-macro dt 0.0004)
(defkernel-symbol-macro pi 3.1415927)
(defkernel-symbol-macro visc 0.2)
(defkernel-symbol-macro limit 200.0)
(defkernel-symbol-macro pmass (/ 0.00020543 8.0))
(defkernel-symbol-macro radius 0.002)
(defkernel-symbol-macro epsilon 0.00001)
(defkernel-symbol-macro extdamp 512.0)
(defkernel-symbol-macro simscale 0.004)
(defkernel-symbol-macro intstiff 3.0)
(defkernel-symbol-macro extstiff 20000.0)
(defkernel-symbol-macro restdensity 600.0)
(defkernel-symbol-macro g (float4 0.0 -9.8 0.0 0.0))

;;; The box and the neighbour grid: delta = h/simscale in float (1.2499999), origin = box-min - 2·delta,
;;; size = ceil(extent/delta) + 4 cells per axis. The host checks these against its own computation.
(defglobal box-min (float4 -10.0 0.0 -10.0 0.0) :constant)
(defglobal box-max (float4 30.0 50.0 30.0 0.0) :constant)
(defglobal origin (float4 -12.5 -2.4999998 -12.5 0.0) :constant)
(defglobal delta 1.2499999 :constant)
(defglobal capacity 400 :constant)
(defglobal size-x 37 :constant)
(defglobal size-y 45 :constant)
(defglobal size-z 37 :constant)

;;; x raised to the literal power n, as a product.
(defkernelmacro pow (x n)
  (if (= n 1)
      x
      `(* ,x (pow ,x ,(- n 1)))))

;;; Binds var to this thread's particle index and runs body when it is below n.
(defkernelmacro with-particle-index ((var n) &body body)
  `(let ((,var (+ (* block-idx-x block-dim-x) thread-idx-x)))
     (when (< ,var ,n)
       ,@body)))

(defkernel norm4 (float ((x float4)))
  (return (sqrt (+ (* (float4-x x) (float4-x x))
                   (* (float4-y x) (float4-y x))
                   (* (float4-z x) (float4-z x))
                   (* (float4-w x) (float4-w x))))))

(defkernel cell-of (int ((x float) (x0 float)))
  (return (floor (/ (- x x0) delta))))

(defkernel count-offset (int ((i int) (j int) (k int)))
  (return (+ (* size-x size-y k) (* size-x j) i)))

;;; Runs body with var bound to each particle of the 27 cells around position x.
(defkernelmacro do-neighbors ((var count map x) &body body)
  (let ((i0 (gensym)) (j0 (gensym)) (k0 (gensym))
        (i (gensym)) (j (gensym)) (k (gensym))
        (co (gensym)) (m (gensym)) (l (gensym)))
    `(let ((,i0 (cell-of (float4-x ,x) (float4-x origin)))
           (,j0 (cell-of (float4-y ,x) (float4-y origin)))
           (,k0 (cell-of (float4-z ,x) (float4-z origin))))
       (for (,i (- ,i0 1) (<= ,i (+ ,i0 1)) (+ ,i 1))
         (for (,j (- ,j0 1) (<= ,j (+ ,j0 1)) (+ ,j 1))
           (for (,k (- ,k0 1) (<= ,k (+ ,k0 1)) (+ ,k 1))
             (let* ((,co (count-offset ,i ,j ,k))
                    (,m (min (aref ,count ,co) capacity)))
               (for (,l 0 (< ,l ,m) (+ ,l 1))
                 (let ((,var (aref ,map (+ (* ,co capacity) ,l))))
                   ,@body)))))))))

(defkernel clear-neighbor-count (void ((count int* :restrict)))
  (set (aref count (count-offset thread-idx-x block-idx-x block-idx-y)) 0))

(defkernel update-neighbor-map (void ((count int* :restrict) (map int* :restrict)
                                      (pos float4* :restrict) (n int)))
  (with-particle-index (p n)
    (let* ((x (aref pos p))
           (co (count-offset (cell-of (float4-x x) (float4-x origin))
                             (cell-of (float4-y x) (float4-y origin))
                             (cell-of (float4-z x) (float4-z origin))))
           (l (atomic-add (pointer (aref count co)) 1)))
      (when (< l capacity)
        (set (aref map (+ (* co capacity) l)) p)))))

(defkernel update-density (void ((rho float* :restrict) (pos float4* :restrict)
                                 (count int* :restrict) (map int* :restrict) (n int)))
  (with-particle-index (i n)
    (let ((xi (aref pos i))
          (tmp 0.0))
      (do-neighbors (j count map xi)
        (let* ((dr (* (- xi (aref pos j)) simscale))
               (r (norm4 dr)))
          (when (<= r h)
            (inc tmp (* pmass (* (/ 315.0 (* 64.0 pi (pow h 9)))
                                 (pow (- (* h h) (* r r)) 3)))))))
      (set (aref rho i) tmp))))

(defkernel update-pressure (void ((prs float* :restrict) (rho float* :restrict) (n int)))
  (with-particle-index (i n)
    (set (aref prs i) (* (- (aref rho i) restdensity) intstiff))))

(defkernel update-force (void ((force float4* :restrict) (pos float4* :restrict)
                               (vel float4* :restrict) (rho float* :restrict) (prs float* :restrict)
                               (count int* :restrict) (map int* :restrict) (n int)))
  (with-particle-index (i n)
    (let ((xi (aref pos i))
          (tmp (float4 0.0 0.0 0.0 0.0)))
      (do-neighbors (j count map xi)
        (when (/= i j)
          (let* ((dr (* (- xi (aref pos j)) simscale))
                 (r (norm4 dr)))
            (when (<= r h)
              ;; pressure: -pmass (p_i + p_j) / (2 rho_j) · ∇W_spiky(dr)
              (inc tmp (* (/ (* (- pmass) (+ (aref prs i) (aref prs j)))
                             (* 2.0 (aref rho j)))
                          (* (* (/ -45.0 (* pi (pow h 6))) (pow (- h r) 2))
                             (/ dr r))))
              ;; viscosity: visc pmass (v_j - v_i) / rho_j · ∇²W_visc(dr)
              (inc tmp (* (/ (* (* visc pmass) (- (aref vel j) (aref vel i)))
                             (aref rho j))
                          (* (/ 45.0 (* pi (pow h 6))) (- h r))))))))
      (set (aref force i) tmp))))

(defkernel update-acceleration (void ((acc float4* :restrict) (force float4* :restrict)
                                      (rho float* :restrict) (n int)))
  (with-particle-index (i n)
    (set (aref acc i) (+ (/ (aref force i) (aref rho i)) g))))

;;; The penalty of one wall: pushes a back along the wall's normal when the particle is nearer
;;; than 2·radius (x0 < x1 along the normal).
(defkernel collision (float4 ((a float4) (x0 float) (x1 float) (v float4) (normal float4)))
  (let ((diff (- (* radius 2.0) (* (- x1 x0) simscale))))
    (when (< epsilon diff)
      (return (+ a (* (- (* extstiff diff) (* extdamp (dot normal v))) normal))))
    (return a)))

(defkernel boundary-condition (void ((acc float4* :restrict) (pos float4* :restrict)
                                     (vel float4* :restrict) (n int)))
  (with-particle-index (i n)
    (let ((x (aref pos i))
          (v (aref vel i))
          (a (aref acc i)))
      (set a (collision a (float4-x box-min) (float4-x x) v (float4 1.0 0.0 0.0 0.0)))
      (set a (collision a (float4-x x) (float4-x box-max) v (float4 -1.0 0.0 0.0 0.0)))
      (set a (collision a (float4-y box-min) (float4-y x) v (float4 0.0 1.0 0.0 0.0)))
      (set a (collision a (float4-y x) (float4-y box-max) v (float4 0.0 -1.0 0.0 0.0)))
      (set a (collision a (float4-z box-min) (float4-z x) v (float4 0.0 0.0 1.0 0.0)))
      (set a (collision a (float4-z x) (float4-z box-max) v (float4 0.0 0.0 -1.0 0.0)))
      (let ((speed (norm4 a)))
        (when (< limit speed)
          (set a (* a (/ limit speed)))))
      (set (aref acc i) a))))

(defkernel update-velocity (void ((vel float4* :restrict) (acc float4* :restrict) (n int)))
  (with-particle-index (i n)
    (inc (aref vel i) (* (aref acc i) dt))))

(defkernel update-position (void ((pos float4* :restrict) (vel float4* :restrict) (n int)))
  (with-particle-index (i n)
    (inc (aref pos i) (/ (* (aref vel i) dt) simscale))))

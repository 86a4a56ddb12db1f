;;;; One step of all-pairs gravitational n-body (the CUDA SDK / GPU Gems 3 algorithm that
;;;; cl-cuda's nbody example ports). Positions are float4 with the mass in w. Each block stages
;;;; 256 bodies at a time in a shared float4 tile; every thread accumulates their pull on its body
;;;; (softened: d² + ε², rsqrt; 20 flops per interaction by the usual count; the body itself
;;;; contributes nothing since dx = 0). Then v = (v + a·dt)·damping, x += v·dt, written to the
;;;; other position buffer. n must be a multiple of 256; launch n/256 blocks of 256 threads.

;;; Adds body q's pull on body p to (ax ay az).
(defkernelmacro interact (q p ax ay az softening2)
  `(let* ((q ,q)
          (dx (- (float4-x q) (float4-x ,p)))
          (dy (- (float4-y q) (float4-y ,p)))
          (dz (- (float4-z q) (float4-z ,p)))
          (d2 (+ (+ (+ (* dx dx) (* dy dy)) (* dz dz)) ,softening2))
          (inv (rsqrt d2))
          (s (* (float4-w q) (* (* inv inv) inv))))
     (inc ,ax (* dx s))
     (inc ,ay (* dy s))
     (inc ,az (* dz s))))

(defkernel nbody-step (void ((pos float4* :restrict) (vel float4* :restrict) (pos-out float4* :restrict)
                             (n int) (dt float) (damping float) (softening2 float)))
  (declare (launch-bounds 256))
  (with-shared-memory ((tile float4 256))
    (let* ((i (+ (* block-idx-x block-dim-x) thread-idx-x))
           (p (aref pos i))
           (ax 0.0)
           (ay 0.0)
           (az 0.0))
      (for (t0 0 (< t0 n) (+ t0 256))
        (set (aref tile thread-idx-x) (aref pos (+ t0 thread-idx-x)))
        (syncthreads)
        (for (j 0 (< j 256) (+ j 8))
          (unroll (u 0 1 8)
            (interact (aref tile (+ j u)) p ax ay az softening2)))
        (syncthreads))
      (let ((v (aref vel i)))
        (set (float4-x v) (* (+ (float4-x v) (* ax dt)) damping))
        (set (float4-y v) (* (+ (float4-y v) (* ay dt)) damping))
        (set (float4-z v) (* (+ (float4-z v) (* az dt)) damping))
        (set (aref vel i) v)
        (set (aref pos-out i)
             (float4 (+ (float4-x p) (* (float4-x v) dt))
                     (+ (float4-y p) (* (float4-y v) dt))
                     (+ (float4-z p) (* (float4-z v) dt))
                     (float4-w p)))))))

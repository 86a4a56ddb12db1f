;;; Texture and surface kernels shared by chorus-cpu's texture tests and the facade's GPU
;;; comparison (crates/chorus/tests/texture_gpu.rs): each thread reads at its own coordinates.

(defkernel sample-1d (void ((out float*) (tex texture-object) (xs float*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex1d float tex (aref xs i))))))

(defkernel sample-2d (void ((out float*) (tex texture-object) (xs float*) (ys float*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex2d float tex (aref xs i) (aref ys i))))))

(defkernel sample-2d-float4 (void ((out float4*) (tex texture-object) (xs float*) (ys float*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex2d float4 tex (aref xs i) (aref ys i))))))

(defkernel sample-2d-int (void ((out int*) (tex texture-object) (xs float*) (ys float*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex2d int tex (aref xs i) (aref ys i))))))

(defkernel sample-3d (void ((out float*) (tex texture-object) (xs float*) (ys float*) (zs float*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex3d float tex (aref xs i) (aref ys i) (aref zs i))))))

(defkernel fetch-int (void ((out int*) (tex texture-object) (is int*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex1d-fetch int tex (aref is i))))))

(defkernel fetch-float (void ((out float*) (tex texture-object) (is int*) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex1d-fetch float tex (aref is i))))))

;; Each thread (x, y) reads element (x + dx, y + dy) of src and writes it, plus one, to
;; element (x, y) of dst; reads use the boundary mode in the name, writes :zero.
(defkernel surface-shift-clamp (void ((src surface-object) (dst surface-object) (dx int) (dy int)))
  (let ((x (+ (* block-idx-x block-dim-x) thread-idx-x)) (y thread-idx-y))
    (surf2d-write (+ (surf2d-read float src (* 4 (+ x dx)) (+ y dy) :clamp) 1.0)
                  dst (* 4 x) y :zero)))

(defkernel surface-shift-zero (void ((src surface-object) (dst surface-object) (dx int) (dy int)))
  (let ((x (+ (* block-idx-x block-dim-x) thread-idx-x)) (y thread-idx-y))
    (surf2d-write (+ (surf2d-read float src (* 4 (+ x dx)) (+ y dy) :zero) 1.0)
                  dst (* 4 x) y :zero)))

(defkernel surface-shift-trap (void ((src surface-object) (dst surface-object) (dx int) (dy int)))
  (let ((x (+ (* block-idx-x block-dim-x) thread-idx-x)) (y thread-idx-y))
    (surf2d-write (+ (surf2d-read float src (* 4 (+ x dx)) (+ y dy)) 1.0)
                  dst (* 4 x) y)))

;; 1-D and 3-D surfaces of uchar4-sized elements (uint), and float4 elements in 2-D.
(defkernel surface-1d-invert (void ((s surface-object) (n int)))
  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
    (if (< i n)
        (surf1d-write (logxor (surf1d-read uint s (* 4 i)) (uint #xffffffff)) s (* 4 i)))))

(defkernel surface-3d-index (void ((s surface-object)))
  (let ((x thread-idx-x) (y thread-idx-y) (z thread-idx-z))
    (surf3d-write (+ x (* 10 y) (* 100 z)) s (* 4 x) y z)))

(defkernel surface-float4-swap (void ((s surface-object)))
  (let* ((x thread-idx-x) (y thread-idx-y)
         (v (surf2d-read float4 s (* 16 x) y)))
    (surf2d-write (float4 (float4-w v) (float4-z v) (float4-y v) (float4-x v)) s (* 16 x) y)))

;; defglobal: read device and constant globals set by the host, update a device global.
(defglobal foo 0)
(defglobal bar 0 :constant)
(defglobal origin (float3 1.0 (- 2.0) 3))
(defglobal counter 0)

(defkernel add-globals (void ((out int*) (f float*)))
  (set (aref out 0) (+ foo bar))
  (set (aref f 0) (+ (float3-x origin) (float3-y origin) (float3-z origin)))
  (set counter (+ counter 10))
  (set foo (* foo 7)))

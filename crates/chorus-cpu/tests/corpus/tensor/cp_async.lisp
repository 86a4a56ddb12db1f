;; cp.async global → shared in 16-, 8- and 4-byte pieces (the 16-byte ones with :cg, the
;; others :ca), two commit groups, a wait for the first and then for all, and the tile copied
;; back out through registers (each thread reading words another thread copied).
(defkernel copy-async (void ((src uint*) (out uint*)))
  (with-shared-memory ((tile uint 448))
    (let ((i thread-idx-x))
      ;; Words 0-255: 16 bytes per thread.
      (cp-async (pointer (aref tile (* i 4))) (pointer (aref src (* i 4))) 16)
      (cp-async-commit)
      ;; Words 256-383: 8 bytes per thread; 384-447: 4 bytes per thread, :ca.
      (cp-async (pointer (aref tile (+ 256 (* i 2)))) (pointer (aref src (+ 256 (* i 2)))) 8 :ca)
      (cp-async (pointer (aref tile (+ 384 i))) (pointer (aref src (+ 384 i))) 4)
      (cp-async-commit)
      (cp-async-wait 1)
      (cp-async-wait-all)
      (syncthreads)
      (for (k i (< k 448) (+ k 64))
        (set (aref out k) (+ (aref tile (- 447 k)) 1))))))

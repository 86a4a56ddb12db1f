;; printf from every thread of a warp (the output is not checked, only that it runs).
(defkernel say (void ((n int) (word uint8*)))
  (let ((tx thread-idx-x))
    (if (< tx n)
        (printf "chorus thread %d of %u: %5.2f %e %g %x %s%c %lld\n"
                tx (uint n) (* 1.5 tx) 12345.678d0 0.0001 255 word 33 (int64 -5000000000)))))

#!/usr/bin/env python3
"""PyTorch's flash attention (scaled_dot_product_attention restricted to the FLASH_ATTENTION
backend, FlashAttention-2's kernels) at the shapes of the `attention` example, BF16, causal and
not, timed with CUDA events: a few warm-up calls, then the median of `--iterations` timed calls.
Prints one line per mask in the example's form:

    attention (PyTorch flash SDPA) non-causal: 1.234 ms, 456.7 TFLOP/s

with 4·B·H·S²·D flops (half of that when causal), as the example counts them.

    python3 benches/attention_torch.py [--batch 4] [--heads 32] [--seq 4096] [--dim 128]
                                       [--causal | --non-causal] [--iterations 20]
"""

import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--dim", type=int, default=128)
    mask = parser.add_mutually_exclusive_group()
    mask.add_argument("--causal", action="store_true", help="only the causal mask")
    mask.add_argument("--non-causal", action="store_true", help="only without a mask")
    mask.add_argument("--both", action="store_true", help="non-causal, then causal (default)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    masks = [True] if args.causal else [False] if args.non_causal else [False, True]
    b, h, s, d = args.batch, args.heads, args.seq, args.dim
    device = torch.device("cuda")
    print(f"attention_torch: torch {torch.__version__}, {torch.cuda.get_device_name(device)}")
    print(f"batch {b} × heads {h} × seq {s} × dim {d}, BF16, scale 1/√{d}")
    generator = torch.Generator(device=device).manual_seed(16)
    # The example's distributions: Q, K uniform in [-2, 2), V in [-1, 1).
    q = (torch.rand(b, h, s, d, device=device, generator=generator) * 4 - 2).to(torch.bfloat16)
    k = (torch.rand(b, h, s, d, device=device, generator=generator) * 4 - 2).to(torch.bfloat16)
    v = (torch.rand(b, h, s, d, device=device, generator=generator) * 2 - 1).to(torch.bfloat16)

    for causal in masks:
        name = "causal" if causal else "non-causal"
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for _ in range(args.warmup):
                out = run()
            torch.cuda.synchronize()
            times = []
            for _ in range(args.iterations):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                out = run()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)  # seconds
        seconds = statistics.median(times)
        flop = 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)
        print(f"attention (PyTorch flash SDPA) {name}: {seconds * 1e3:.3f} ms, "
              f"{flop / seconds / 1e12:.1f} TFLOP/s")
        # A sanity check of what was timed: row 0 of head 0 against float64.
        scores = (q[0, 0, :1].double() @ k[0, 0].double().T) / d**0.5
        if causal:
            scores[:, 1:] = float("-inf")
        want = torch.softmax(scores, dim=-1) @ v[0, 0].double()
        error = (out[0, 0, :1].double() - want).abs().max().item()
        print(f"  row 0 of head 0 against float64: largest error {error:.2e}")


if __name__ == "__main__":
    main()

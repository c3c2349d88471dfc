"""tests/gpu/torch_bench.py — time one PyTorch training step of a small
transformer (6 encoder layers, d=512, 8 heads, batch 32 x 256 tokens,
AdamW), synchronizing after every step. run.sh runs it alternately with
and without the shim. Appends one CSV line to --out:
  label,repeat,median_ms,mean_ms,min_ms,max_reserved_bytes
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--repeat", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    torch = gpucase.cuda_torch("torch_step")
    step = gpucase.transformer(torch)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    line = (f"{args.label},{args.repeat},{statistics.median(times):.3f},"
            f"{statistics.fmean(times):.3f},{min(times):.3f},"
            f"{torch.cuda.max_memory_reserved()}")
    with open(args.out, "a", encoding="ascii") as f:
        f.write(line + "\n")
    print(f"torch_step {line}")


if __name__ == "__main__":
    main()

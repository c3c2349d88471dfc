"""tests/gpu/torch_train.py — train the suite's transformer (gpucase.transformer:
6 encoder layers, d=512, 8 heads, AdamW) for --steps steps of a
batch of --batch sequences of 256 tokens. The program gpumem fit and
gpumem record run in tests/gpu/plan_check.py. Exits 0 when every step
ran, 3 when torch.OutOfMemoryError was raised, 77 without torch or a GPU.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch = gpucase.cuda_torch("torch_train")
    try:
        step = gpucase.transformer(torch, args.batch)
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        print(f"torch_train: batch {args.batch}: out of memory", flush=True)
        sys.exit(3)
    print(f"torch_train: batch {args.batch}: {args.steps} steps, max reserved "
          f"{torch.cuda.max_memory_reserved()}", flush=True)


if __name__ == "__main__":
    main()

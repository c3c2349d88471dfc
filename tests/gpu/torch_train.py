"""tests/gpu/torch_train.py — train the suite's transformer (torch_bench.py's
model: 6 encoder layers, d=512, 8 heads, AdamW) for --steps steps of a
batch of --batch sequences of 256 tokens. The program gpumem fit and
gpumem record run in tests/gpu/plan_check.py. Exits 0 when every step
ran, 3 when torch.OutOfMemoryError was raised, 77 without torch or a GPU.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    try:
        import torch
        from torch import nn
    except Exception as e:
        print(f"SKIP torch_train: torch does not import: {e}")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("SKIP torch_train: torch sees no CUDA device")
        sys.exit(77)
    torch.manual_seed(0)
    try:
        layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                           dropout=0.0, batch_first=True)
        model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=6,
                                                    enable_nested_tensor=False),
                              nn.Linear(512, 512)).to("cuda")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randn(args.batch, 256, 512, device="cuda")
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            model(x).float().pow(2).mean().backward()
            opt.step()
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        print(f"torch_train: batch {args.batch}: out of memory", flush=True)
        sys.exit(3)
    print(f"torch_train: batch {args.batch}: {args.steps} steps, max reserved "
          f"{torch.cuda.max_memory_reserved()}", flush=True)


if __name__ == "__main__":
    main()

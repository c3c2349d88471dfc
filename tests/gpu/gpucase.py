"""tests/gpu/gpucase.py — the harness shared by the Python framework cases.

Same protocol as the C cases (tests/gpu/gc.h): a case prints "  ok   ..." or
"  FAIL ..." per check and one closing line "PASS|FAIL|SKIP name: detail";
it exits 0 pass, 1 fail, 77 skip. Without --expect-limit it runs without the
shim and checks only what does not depend on a limit; with
--expect-limit BYTES it runs under the shim with that GPUMEM_LIMIT.
"""
import argparse
import sys

MIB = 1 << 20


class Case:
    """Counts checks and prints the closing line."""

    def __init__(self, name, limit):
        self.name = name
        self.limit = limit
        self.checks = 0
        self.fails = 0
        self.first = ""
        mode = "under the shim, limit checks on" if limit else "without the shim (sanity)"
        print(f"  {name}: {mode}", flush=True)

    def check(self, ok, msg):
        self.checks += 1
        if not ok:
            self.fails += 1
            if not self.first:
                self.first = msg
        print(f"  {'ok  ' if ok else 'FAIL'} {msg}", flush=True)
        return bool(ok)

    def note(self, msg):
        print(f"  note {msg}", flush=True)

    def skip(self, why):
        print(f"SKIP {self.name}: {why}", flush=True)
        sys.exit(77)

    def finish(self):
        if self.fails:
            print(f"FAIL {self.name}: {self.fails} of {self.checks} checks failed; "
                  f"first: {self.first}", flush=True)
            sys.exit(1)
        where = f"under a {self.limit}-byte limit" if self.limit else "without the shim"
        print(f"PASS {self.name}: {self.checks} checks {where}", flush=True)
        sys.exit(0)


def parse(description, cases, extra=()):
    """Arguments common to every Python case: the case and the limit; extra:
    (option, default) pairs of string options of the script's own."""
    ap = argparse.ArgumentParser(description=description)
    for opt, default in extra:
        ap.add_argument(opt, default=default)
    ap.add_argument("case", choices=cases)
    ap.add_argument("--expect-limit", type=int, default=0,
                    help="the GPUMEM_LIMIT in bytes the shim runs with (0: no shim)")
    ap.add_argument("--gpumem", default="", help="path of the gpumem tool")
    return ap.parse_args()


def numbers_under(obj, want):
    """Every integer found under a key for which want(key) is true, at any
    depth of a decoded JSON document (the tools' schemas may nest devices)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if want(str(k)) and isinstance(v, (int, float)) and not isinstance(v, bool):
                found.append(int(v))
            else:
                found.extend(numbers_under(v, want))
    elif isinstance(obj, list):
        for v in obj:
            found.extend(numbers_under(v, want))
    return found


def objects_with(obj, key, value):
    """Every dict at any depth whose `key` equals `value`."""
    out = []
    if isinstance(obj, dict):
        if obj.get(key) == value:
            out.append(obj)
        for v in obj.values():
            out.extend(objects_with(v, key, value))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(objects_with(v, key, value))
    return out


def dicts_under(obj, key):
    """Every dict found as the value of `key` at any depth."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key and isinstance(v, dict):
                out.append(v)
            else:
                out.extend(dicts_under(v, key))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(dicts_under(v, key))
    return out


def cuda_torch(name):
    """torch, when it imports and sees a CUDA device; otherwise prints
    "SKIP name: why" and exits 77 (a script's own skip)."""
    try:
        import torch
    except Exception as e:  # any import failure means: no usable torch here
        print(f"SKIP {name}: torch does not import: {e}")
        sys.exit(77)
    if not torch.cuda.is_available():
        print(f"SKIP {name}: torch sees no CUDA device")
        sys.exit(77)
    return torch


def transformer(torch, batch=32):
    """The suite's transformer: 6 encoder layers, d=512, 8 heads, AdamW, a
    batch of `batch` sequences of 256 tokens on CUDA device 0. Returns one
    training step (a function of no arguments)."""
    from torch import nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                       dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=6,
                                                enable_nested_tensor=False),
                          nn.Linear(512, 512)).to("cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, 256, 512, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        opt.step()
    return step

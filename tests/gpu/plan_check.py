"""tests/gpu/plan_check.py — planning on real runs: gpumem fit and
gpumem record + replay with the suite's transformer (torch_train.py).

Cases (run.sh runs each without the shim first, which only checks that
torch_train.py runs, then with --expect-limit; the case starts the
gpumem runs itself):
  fit     `gpumem fit --limit L --param batch=1:128` on torch_train.py
          completes and answers a batch that runs under the limit, where
          batch + 1 does not fit (fit's own run of it, and again: exit 3
          for torch.OutOfMemoryError, or a refusal in its report).
  replay  20 steps of batch 16 recorded under each PyTorch allocator
          (--conf: PYTORCH_CUDA_ALLOC_CONF, "" for the default) replay on
          the simulated driver (gpumem replay) to the peak of the real
          run's exit report, beyond each one's context, within the real
          run's context size (skipped without gpumem-replay and build/sim).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = [sys.executable, os.path.join(HERE, "torch_train.py")]


def clean_env(conf=None):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("GPUMEM_")}
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    return env


def reports(path):
    """The exit reports at path: one JSON object per line, one line per
    process that reported (GPUMEM_REPORT=json appends)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run(cmd, env, timeout=300):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def sanity(c):
    r = run(TRAIN + ["--batch", "2", "--steps", "2"], clean_env())
    if r.returncode == 77:
        c.skip(r.stdout.strip() or "torch_train.py skipped")
    c.check(r.returncode == 0, f"torch_train.py runs without the shim ({r.returncode}: "
                               f"{(r.stdout + r.stderr)[-300:]})")


def refused_or_oom(tool, limit, batch):
    """Whether batch does not fit: torch.OutOfMemoryError (exit 3), or a
    run that ended well after a refusal (PyTorch's caching allocator
    empties its cache and retries a refused cudaMalloc)."""
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "report.json")
        env = clean_env()
        env["GPUMEM_REPORT"] = f"json:{rep}"
        r = run([tool, "run", "--limit", limit, "--"] + TRAIN + ["--batch", str(batch)],
                env)
        if r.returncode == 3:
            return True, "exit 3"
        try:
            refused = sum(d.get("refused", 0) for r in reports(rep)
                          for d in r["devices"])
        except (OSError, ValueError, KeyError):
            refused = 0
        return r.returncode == 0 and refused > 0, f"exit {r.returncode}, {refused} refused"


def case_fit(c, tool):
    limit = str(c.limit)
    r = run([tool, "fit", "--limit", limit, "--param", "batch=1:128", "--json", "--"]
            + TRAIN + ["--batch", "{batch}", "--steps", "3"], clean_env(), timeout=900)
    if not c.check(r.returncode == 0, f"gpumem fit answers ({r.returncode}: "
                                      f"{(r.stdout + r.stderr)[-300:]})"):
        return
    doc = json.loads(r.stdout)
    ans = doc.get("answer")
    if not c.check(isinstance(ans, int) and ans >= 1, f"an answer ({ans})"):
        return
    c.check(doc.get("complete") is True, f"the search completed ({doc.get('complete')})")
    c.note(f"fit answers batch {ans} in {len(doc.get('runs', []))} runs")
    at = run([tool, "run", "--limit", limit, "--"] + TRAIN + ["--batch", str(ans)],
             clean_env())
    c.check(at.returncode == 0, f"batch {ans} runs under the limit ({at.returncode})")
    if ans < 128:
        over = [x for x in doc.get("runs", []) if x.get("value") == ans + 1]
        c.check(bool(over) and over[0].get("fits") is False,
                f"fit's own run of batch {ans + 1} did not fit ({over})")
        no, how = refused_or_oom(tool, limit, ans + 1)
        c.check(no, f"batch {ans + 1} does not fit again ({how})")


def case_replay(c, tool, conf):
    here = os.path.dirname(os.path.abspath(tool))
    if not os.path.exists(os.path.join(here, "gpumem-replay")) or \
            not os.path.exists(os.path.join(here, "sim", "libcuda.so.1")):
        c.skip(f"no gpumem-replay or simulated driver beside {tool} (make all)")
    with tempfile.TemporaryDirectory() as d:
        rec, rep = os.path.join(d, "run.gmr"), os.path.join(d, "report.json")
        env = clean_env(conf)
        env["GPUMEM_REPORT"] = f"json:{rep}"
        r = run([tool, "record", "-o", rec, "--limit", str(c.limit), "--"] + TRAIN
                + ["--batch", "16", "--steps", "20"], env)
        if not c.check(r.returncode == 0, f"the recorded run ends well ({r.returncode}: "
                                          f"{(r.stdout + r.stderr)[-300:]})"):
            return
        real = [r for r in reports(rep) if r["devices"]]
        if not c.check(len(real) == 1, f"one process of the run used the GPU "
                                       f"({len(real)} reports)"):
            return
        dev = real[0]["devices"][0]
        ctx = dev.get("context_peak_bytes", dev["context_bytes"])
        real_alloc = dev["peak_bytes"] - ctx
        p = run([tool, "replay", rec, "--json"], clean_env())
        if not c.check(p.returncode == 0, f"gpumem replay runs ({p.returncode}: "
                                          f"{(p.stdout + p.stderr)[-300:]})"):
            return
        doc = json.loads(p.stdout)
        peaks = gpucase.numbers_under(doc, lambda k: k == "peak_bytes")
        ctxs = gpucase.numbers_under(doc, lambda k: k == "context_bytes")
        if not c.check(bool(peaks) and bool(ctxs), "the replay reports a peak and a context"):
            return
        # The replay's context is the simulator's, not the card's: compare
        # what was allocated beyond it.
        replay_alloc = max(peaks) - max(ctxs)
        c.check(abs(replay_alloc - real_alloc) <= ctx,
                f"replayed peak less context {replay_alloc} = real {real_alloc} within "
                f"the context ({ctx}; off by {replay_alloc - real_alloc})")


def main():
    args = gpucase.parse(__doc__, ["fit", "replay"], extra=[("--conf", "")])
    c = gpucase.Case(f"plan_{args.case}" + (f"[{args.conf}]" if args.conf else ""),
                     args.expect_limit)
    if not args.gpumem:
        c.skip("no --gpumem PATH given")
    if not c.limit:
        sanity(c)  # the pass without the shim: torch_train.py runs here
    elif args.case == "fit":
        case_fit(c, args.gpumem)
    else:
        case_replay(c, args.gpumem, args.conf)
    c.finish()


if __name__ == "__main__":
    main()

"""tests/gpu/plan_check.py — planning on real runs: gpumem fit and
gpumem record + replay with the suite's transformer (torch_train.py).

Cases (run.sh runs each without the shim first, which only checks that
torch_train.py runs, then with --expect-limit; the case starts the
gpumem runs itself):
  fit     `gpumem fit --limit L --param batch=1:128` on torch_train.py
          answers a batch that runs under the limit, where batch + 1
          raises torch.OutOfMemoryError (exit 3).
  replay  20 steps of batch 16 recorded under each PyTorch allocator
          (--conf: PYTORCH_CUDA_ALLOC_CONF, "" for the default) replay on
          the simulated driver (gpumem replay) to the peak of the real
          run's exit report within the real run's context size.
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


def run(cmd, env, timeout=300):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def sanity(c):
    r = run(TRAIN + ["--batch", "2", "--steps", "2"], clean_env())
    if r.returncode == 77:
        c.skip(r.stdout.strip() or "torch_train.py skipped")
    c.check(r.returncode == 0, f"torch_train.py runs without the shim ({r.returncode}: "
                               f"{(r.stdout + r.stderr)[-300:]})")


def case_fit(c, tool):
    limit = str(c.limit)
    r = run([tool, "fit", "--limit", limit, "--param", "batch=1:128", "--json", "--"]
            + TRAIN + ["--batch", "{batch}", "--steps", "3"], clean_env(), timeout=900)
    if not c.check(r.returncode == 0, f"gpumem fit answers ({r.returncode}: "
                                      f"{(r.stdout + r.stderr)[-300:]})"):
        return
    ans = json.loads(r.stdout).get("answer")
    if not c.check(isinstance(ans, int) and ans >= 1, f"an answer ({ans})"):
        return
    c.note(f"fit answers batch {ans}")
    at = run([tool, "run", "--limit", limit, "--"] + TRAIN + ["--batch", str(ans)],
             clean_env())
    c.check(at.returncode == 0, f"batch {ans} runs under the limit ({at.returncode})")
    if ans < 128:
        over = run([tool, "run", "--limit", limit, "--"] + TRAIN
                   + ["--batch", str(ans + 1)], clean_env())
        c.check(over.returncode == 3, f"batch {ans + 1} raises torch.OutOfMemoryError "
                                      f"(exit {over.returncode})")


def case_replay(c, tool, conf):
    with tempfile.TemporaryDirectory() as d:
        rec, rep = os.path.join(d, "run.gmr"), os.path.join(d, "report.json")
        env = clean_env(conf)
        env["GPUMEM_REPORT"] = f"json:{rep}"
        r = run([tool, "record", "-o", rec, "--limit", str(c.limit), "--"] + TRAIN
                + ["--batch", "16", "--steps", "20"], env)
        if not c.check(r.returncode == 0, f"the recorded run ends well ({r.returncode}: "
                                          f"{(r.stdout + r.stderr)[-300:]})"):
            return
        with open(rep, encoding="utf-8") as f:
            real = json.load(f)
        dev = real["devices"][0]
        peak, ctx = dev["peak_bytes"], dev.get("context_peak_bytes", dev["context_bytes"])
        p = run([tool, "replay", rec, "--json"], clean_env())
        if not c.check(p.returncode == 0, f"gpumem replay runs ({p.returncode}: "
                                          f"{(p.stdout + p.stderr)[-300:]})"):
            return
        peaks = gpucase.numbers_under(json.loads(p.stdout), lambda k: k == "peak_bytes")
        if not c.check(bool(peaks), "the replay reports a peak"):
            return
        c.check(abs(max(peaks) - peak) <= ctx,
                f"replayed peak {max(peaks)} = real peak {peak} within the context "
                f"({ctx})")


def main():
    args = gpucase.parse(__doc__, ["fit", "replay"], extra=[("--conf", "")])
    c = gpucase.Case(f"plan_{args.case}" + (f"[{args.conf}]" if args.conf else ""),
                     args.expect_limit)
    if not args.gpumem:
        c.skip("no --gpumem PATH given")
    sanity(c)
    if c.limit:
        (case_fit(c, args.gpumem) if args.case == "fit"
         else case_replay(c, args.gpumem, args.conf))
    c.finish()


if __name__ == "__main__":
    main()

"""tests/gpu/report_check.py — the JSON exit report on a real GPU.

Runs PROG ARGS under the shim (LD_PRELOAD and GPUMEM_* set for that child
only) with GPUMEM_REPORT=json:PATH, then checks: the program passed, the
report exists and is JSON, its peak equals the limit (the program's edge
check takes exactly all the memory the limit leaves, so used reaches the
limit), and a limit it states equals the limit.

usage: report_check.py --so LIB --limit 2G --bytes N --report PATH -- PROG ARGS...
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402


def is_peak_key(k):
    k = k.lower()
    return "peak" in k and not any(s in k for s in ("time", "when", "_at", "ts", "sec",
                                                      "_ns", "_ms", "frag", "rate", "host"))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--so", required=True)
    ap.add_argument("--limit", required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("prog", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    prog = args.prog[1:] if args.prog[:1] == ["--"] else args.prog
    c = gpucase.Case("exit_report", args.bytes)
    if os.path.exists(args.report):
        os.unlink(args.report)
    env = dict(os.environ, LD_PRELOAD=args.so, GPUMEM_LIMIT=args.limit,
               GPUMEM_REPORT=f"json:{args.report}")
    run = subprocess.run(prog, env=env, capture_output=True, text=True, timeout=50)
    if run.returncode == 77:
        c.skip("the program skipped: " + run.stdout.strip().splitlines()[-1])
    c.check(run.returncode == 0, f"{os.path.basename(prog[0])} passes under the shim "
                                 f"(exit {run.returncode})")
    if not c.check(os.path.exists(args.report), f"the report {args.report} was written"):
        c.note("stderr: " + run.stderr.strip()[-500:])
        c.finish()
    with open(args.report, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        c.check(False, f"the report is JSON ({e}): {text[:300]!r}")
        c.finish()
    c.check(True, "the report is JSON")
    peaks = gpucase.numbers_under(doc, is_peak_key)
    if c.check(bool(peaks), "the report has a numeric peak"):
        c.check(max(peaks) == args.bytes,
                f"peak {max(peaks)} equals the limit {args.bytes} the program filled")
    else:
        c.note(text[:1500])
    limits = gpucase.numbers_under(doc, lambda k: k.lower() in ("limit", "limit_bytes"))
    if limits:
        c.check(args.bytes in limits, f"the report states the limit ({limits})")
    c.finish()


if __name__ == "__main__":
    main()

"""tests/gpu/torch_check.py — PyTorch under the shim.

Cases (run.sh runs each without the shim first, then with it):
  oom   256 MiB tensors until the limit: torch.OutOfMemoryError is raised
        (not another error, not a crash) after about the free memory the
        shim reports, and below the limit; mem_get_info() and
        get_device_properties().total_memory report the limit; allocation
        works again after the refusal; no drift once the cache is emptied.
        Run once per allocator (PYTORCH_CUDA_ALLOC_CONF: default,
        expandable_segments:True, backend:cudaMallocAsync).
  ps    `gpumem ps --json` lists this process with the peak PyTorch itself
        reports (max_memory_reserved) plus what was in use before PyTorch
        allocated (the context), within 2 MiB.
  nccl  a 1-rank all_reduce through torch.distributed (NCCL backend) works
        under the shim, and NCCL's own device memory is counted.
  leak  a loop that keeps one more 64 MiB tensor every step (gpumem_step()
        after each): `gpumem ps --json` gives the verdict "grows" at
        64 MiB per step within 5%, and its forecast (step_now + steps) is
        within 10% of the step at which torch.OutOfMemoryError comes.
  steady the suite's transformer (gpucase.transformer) trained for 40
        marked steps (gpumem_step() after each) gets no verdict of growth.
  exporter two PyTorch jobs under the limit hold 512 MiB and 1 GiB:
        `gpumem exporter --once` gives each of them (by pid, device 0) the
        gpumem_used_bytes that `gpumem ps --json` shows as its used_bytes.
  visible on a machine with two GPUs or more (skipped otherwise): under
        CUDA_VISIBLE_DEVICES=1,0 with GPUMEM_LIMIT_0=1G and
        GPUMEM_LIMIT_1=2G, CUDA device 0 (the physical GPU 1, by UUID)
        shows 1 GiB and device 1 (the physical GPU 0) shows 2 GiB.
  nvml  with 1 GiB held: pynvml (if importable) in the job reports the
        limit as total, cuMemGetInfo's free as free, total - free as used,
        and the job's charge as its own process entry; nvidia-smi started
        from the job (an NVML-only process under the same preload and
        limit) reports the limit as memory.total and as memory.used what
        `gpumem ps` shows the job holds (within 2 MiB; with --gpumem), and
        without a limit the same as nvidia-smi without the preload.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402

MIB = gpucase.MIB
BLOCK = 256 * MIB


def start(c):
    try:
        import torch
    except Exception as e:  # any import failure means: no usable torch here
        c.skip(f"torch does not import: {e}")
    if not torch.cuda.is_available():
        c.skip("torch sees no CUDA device")
    torch.cuda.set_device(0)
    return torch


def check_totals(c, torch):
    """mem_get_info and the device properties show the limit; returns free."""
    free, total = torch.cuda.mem_get_info(0)
    prop = torch.cuda.get_device_properties(0).total_memory
    if c.limit:
        c.check(total == c.limit,
                f"torch.cuda.mem_get_info() total is the limit {c.limit} (got {total})")
        c.check(prop == c.limit,
                f"get_device_properties(0).total_memory is the limit (got {prop})")
        c.check(0 < free < c.limit, f"free {free} is within (0, limit)")
    else:
        c.check(total > 0 and prop > 0 and free <= total,
                f"mem_get_info() = ({free}, {total}), total_memory = {prop}")
    return free


def tensor(torch, nbytes):
    t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    t.fill_(1)
    return t


def case_oom(c):
    torch = start(c)
    c.note(f"torch {torch.__version__}, PYTORCH_CUDA_ALLOC_CONF="
           f"{os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')!r}")
    free0 = check_totals(c, torch)
    t = tensor(torch, BLOCK)
    torch.cuda.synchronize()
    c.check(int(t[-1].item()) == 1, "a 256 MiB tensor is usable")
    del t
    torch.cuda.empty_cache()
    if not c.limit:
        c.check(hasattr(torch, "OutOfMemoryError"), "torch.OutOfMemoryError exists")
        return
    held, raised, other = [], None, None
    try:
        for _ in range(64):  # 16 GiB: far past any limit this suite sets
            held.append(tensor(torch, BLOCK))
        torch.cuda.synchronize()
    except torch.OutOfMemoryError as e:
        raised = e
    except Exception as e:  # the wrong kind of failure is a finding
        other = e
    got = len(held) * BLOCK
    c.check(other is None,
            f"no error other than OutOfMemoryError ({type(other).__name__}: {other})"
            if other else "no error other than OutOfMemoryError")
    c.check(raised is not None, f"torch.OutOfMemoryError raised after {got >> 20} MiB")
    c.check(got < c.limit, f"held {got >> 20} MiB < limit {c.limit >> 20} MiB at the refusal")
    c.check(got + 2 * BLOCK > free0,
            f"refused only near the reported free memory ({got >> 20} of {free0 >> 20} MiB)")
    c.check(torch.cuda.memory_reserved() <= c.limit,
            f"reserved {torch.cuda.memory_reserved() >> 20} MiB <= limit")
    if held:
        held.pop()
        torch.cuda.empty_cache()
        try:
            held.append(tensor(torch, BLOCK))
            torch.cuda.synchronize()
            c.check(True, "allocation works again after freeing one tensor")
        except Exception as e:
            c.check(False, f"allocation after freeing one tensor raised {type(e).__name__}")
    held.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free1 = torch.cuda.mem_get_info(0)[0]
    c.check(abs(free1 - free0) <= 2 * MIB,
            f"no drift once the cache is emptied: free {free1}, was {free0}")


def gpumem_ps(c, tool):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run([tool, "ps", "--json"], env=env, capture_output=True,
                             text=True, timeout=30)
    except Exception as e:
        c.check(False, f"gpumem ps --json runs ({e})")
        return None
    if not c.check(out.returncode == 0, f"gpumem ps --json exits 0 (got {out.returncode}: "
                                        f"{out.stderr.strip()[:200]})"):
        return None
    try:
        return json.loads(out.stdout)
    except ValueError as e:
        c.check(False, f"gpumem ps --json prints JSON ({e}): {out.stdout[:300]!r}")
        return None


def is_peak_key(k):
    k = k.lower()
    return "peak" in k and not any(s in k for s in ("time", "when", "_at", "ts", "sec",
                                                      "_ns", "_ms", "frag", "rate"))


def case_ps(c, tool):
    torch = start(c)
    free0, total = torch.cuda.mem_get_info(0)  # creates the context
    used0 = total - free0
    torch.cuda.reset_peak_memory_stats()
    a = tensor(torch, 300 * MIB)
    b = tensor(torch, 100 * MIB)
    del a
    torch.cuda.empty_cache()
    d = tensor(torch, 50 * MIB)
    torch.cuda.synchronize()
    expected = used0 + torch.cuda.max_memory_reserved()
    if not c.limit:
        c.check(expected > 0, f"max_memory_reserved {torch.cuda.max_memory_reserved()}")
        return
    c.note(f"in use before PyTorch allocated: {used0} bytes; max_memory_reserved "
           f"{torch.cuda.max_memory_reserved()}")
    doc = gpumem_ps(c, tool)
    if doc is None:
        return
    mine = gpucase.objects_with(doc, "pid", os.getpid())
    if not c.check(bool(mine), f"gpumem ps --json lists this process (pid {os.getpid()})"):
        c.note(json.dumps(doc)[:1500])
        return
    peaks = gpucase.numbers_under(mine, is_peak_key)
    if not c.check(bool(peaks), "its entry has a numeric peak"):
        c.note(json.dumps(mine)[:1500])
        return
    peak = max(peaks)
    c.check(abs(peak - expected) <= 2 * MIB,
            f"peak {peak} = max_memory_reserved + context {expected} within 2 MiB "
            f"(off by {peak - expected})")
    # What the process holds now: the allocator's reservation (the caching
    # allocator's segments, or the stream-ordered pool's reserve under
    # backend:cudaMallocAsync) plus the context.
    now = used0 + torch.cuda.memory_reserved()
    used = gpucase.numbers_under(mine, lambda k: k.lower() in ("used", "used_bytes"))
    if c.check(bool(used), "its entry has a numeric used figure"):
        c.check(abs(max(used) - now) <= 2 * MIB,
                f"used {max(used)} = memory_reserved + context {now} within 2 MiB "
                f"(off by {max(used) - now})")
    ctx = gpucase.numbers_under(mine, lambda k: k.lower() in ("context", "context_bytes"))
    if ctx:
        c.check(abs(max(ctx) - used0) <= 2 * MIB,
                f"its context {max(ctx)} is what was in use before PyTorch allocated "
                f"({used0}) within 2 MiB")
    del b, d


def leak_of(c, tool):
    """The "leak" object of this process's device 0 in gpumem ps --json."""
    doc = gpumem_ps(c, tool)
    if doc is None:
        return None
    mine = gpucase.objects_with(doc, "pid", os.getpid())
    found = gpucase.dicts_under(mine, "leak")
    if not c.check(bool(found), "gpumem ps --json has a leak verdict for this process"):
        c.note(json.dumps(mine)[:1500])
        return None
    return found[0]


def marker(c):
    """gpumem_step() of the preloaded shim, or None without the shim."""
    if not c.limit:
        return None
    import ctypes
    try:
        return ctypes.CDLL(None).gpumem_step
    except AttributeError:
        c.check(False, "the preloaded shim exports gpumem_step")
        c.finish()


def case_leak(c, tool):
    torch = start(c)
    mark = marker(c)
    torch.cuda.mem_get_info(0)  # the context
    leak, held, asked, oom_step = 64 * MIB, [], None, None
    for k in range(1, 100000):
        try:
            tmp = tensor(torch, 32 * MIB)  # a step's temporary, cached after
            held.append(tensor(torch, leak))
            del tmp
            torch.cuda.synchronize()
        except torch.OutOfMemoryError:
            oom_step = k
            break
        if mark:
            mark()
        if not c.limit and k == 20:
            break
        if c.limit and k == 24:
            asked = leak_of(c, tool)
            if asked is None:
                return
    if not c.limit:
        c.check(len(held) == 20, f"20 leaking steps ran ({len(held)})")
        return
    c.note(f"leak verdict at step 24: {json.dumps(asked)}")
    c.check(asked.get("verdict") == "grows", f"verdict grows (got {asked.get('verdict')})")
    bps = asked.get("bytes_per_step") or 0
    c.check(abs(bps - leak) <= 0.05 * leak,
            f"bytes_per_step {bps} is 64 MiB within 5%")
    if not c.check(oom_step is not None, "the loop ends in torch.OutOfMemoryError"):
        return
    steps, now = asked.get("steps"), asked.get("step_now")
    if c.check(isinstance(steps, int) and isinstance(now, int),
               f"a forecast in steps (steps {steps}, step_now {now})"):
        want = now + steps
        c.check(abs(want - oom_step) <= 0.1 * oom_step,
                f"forecast refusal at step {want}, torch.OutOfMemoryError at step "
                f"{oom_step} (within 10%)")


def case_steady(c, tool):
    torch = start(c)
    mark = marker(c)
    train = gpucase.transformer(torch)
    for _ in range(40):
        train()
        torch.cuda.synchronize()
        if mark:
            mark()
    if not c.limit:
        c.check(torch.cuda.max_memory_reserved() > 0, "the transformer trained")
        return
    after = leak_of(c, tool)
    if after is not None:
        c.note(f"verdict after 40 steps: {json.dumps(after)}")
        c.check(after.get("verdict") != "grows",
                f"no growth verdict for the transformer (got {after.get('verdict')})")


HOLDER = """
import sys, torch
torch.cuda.set_device(0)
t = torch.empty(int(sys.argv[1]), dtype=torch.uint8, device="cuda")
t.fill_(1)
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.read()
"""


def exported_used(text):
    """gpumem_used_bytes by (pid, device) from the exporter's text."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("gpumem_used_bytes{"):
            continue
        labels, _, value = line.rpartition("} ")
        pid = re.search(r'[{,]pid="(\d+)"', labels)
        dev = re.search(r',device="(\d+)"', labels)
        if pid and dev:
            out[(int(pid.group(1)), int(dev.group(1)))] = int(float(value))
    return out


def case_exporter(c, tool):
    start(c)
    kids = []
    try:
        for size in (512 * MIB, 1024 * MIB):
            k = subprocess.Popen([sys.executable, "-c", HOLDER, str(size)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
            kids.append(k)
            if not c.check(k.stdout.readline().strip() == "ready",
                           f"job {k.pid} holds {size >> 20} MiB"):
                return
        if not c.limit:
            return
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        exp = subprocess.run([tool, "exporter", "--once"], env=env,
                             capture_output=True, text=True, timeout=30)
        if not c.check(exp.returncode == 0, f"gpumem exporter --once exits 0 "
                                            f"({exp.returncode}: {exp.stderr[:200]})"):
            return
        got = exported_used(exp.stdout)
        doc = gpumem_ps(c, tool)
        if doc is None:
            return
        for k in kids:
            mine = gpucase.objects_with(doc, "pid", k.pid)
            used = gpucase.numbers_under(mine, lambda key: key == "used_bytes")
            if not c.check(bool(used), f"gpumem ps --json has job {k.pid}"):
                continue
            e = got.get((k.pid, 0))
            c.check(e == max(used), f"job {k.pid}: exporter's gpumem_used_bytes {e} "
                                    f"= ps --json used_bytes {max(used)}")
    finally:
        for k in kids:
            try:
                k.stdin.close()
                k.wait(timeout=30)
            except Exception:
                k.kill()


VISIBLE = """
import json, torch
out = []
for i in range(torch.cuda.device_count()):
    free, total = torch.cuda.mem_get_info(i)
    out.append([str(torch.cuda.get_device_properties(i).uuid), total])
print(json.dumps(out), flush=True)
"""


def physical_uuids():
    out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout
    return [u.strip() for u in out.splitlines() if u.strip()]


def case_visible(c):
    start(c)
    phys = physical_uuids()
    if len(phys) < 2:
        c.skip(f"needs two GPUs ({len(phys)} here)")
    if not c.limit:
        c.check(True, f"{len(phys)} GPUs")
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_LIMIT")}
    env.update(CUDA_VISIBLE_DEVICES="1,0", GPUMEM_LIMIT_0="1G", GPUMEM_LIMIT_1="2G")
    r = subprocess.run([sys.executable, "-c", VISIBLE], env=env, capture_output=True,
                       text=True, timeout=120)
    if not c.check(r.returncode == 0, f"the reordered job runs ({r.stderr[-300:]})"):
        return
    devs = json.loads(r.stdout.strip().splitlines()[-1])
    if not c.check(len(devs) == 2, f"two CUDA devices ({len(devs)})"):
        return
    for ordinal, (want_phys, limit) in enumerate(((1, 1 << 30), (0, 2 << 30))):
        uuid, total = devs[ordinal]
        uuid = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
        c.check(uuid == phys[want_phys], f"CUDA device {ordinal} is the physical GPU "
                                         f"{want_phys} ({uuid})")
        c.check(total == limit, f"CUDA device {ordinal} shows its limit {limit} "
                                f"(got {total})")


def case_nccl(c):
    torch = start(c)
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        c.skip("this torch has no NCCL backend")
    x = torch.full((1 << 20,), 2.0, device="cuda")
    torch.cuda.synchronize()
    free0, r0 = torch.cuda.mem_get_info(0)[0], torch.cuda.memory_reserved()
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("nccl", init_method=f"file://{d}/store", rank=0,
                                world_size=1)
        try:
            dist.all_reduce(x)
            torch.cuda.synchronize()
            c.check(bool(torch.all(x == 2.0).item()), "1-rank all_reduce keeps the values")
            y = torch.arange(1024, device="cuda", dtype=torch.float32)
            dist.all_reduce(y, op=dist.ReduceOp.MAX)
            torch.cuda.synchronize()
            c.check(float(y[-1].item()) == 1023.0, "a second all_reduce works")
            free1, r1 = torch.cuda.mem_get_info(0)[0], torch.cuda.memory_reserved()
        finally:
            dist.destroy_process_group()
    nccl = (free0 - free1) - (r1 - r0)
    if c.limit:
        c.check(nccl > 0, f"NCCL's own device memory is counted ({nccl} bytes beyond "
                          f"PyTorch's allocator)")
    else:
        c.note(f"free memory fell by {nccl} bytes beyond PyTorch's allocator")


def device_uuid(torch):
    """CUDA device 0's UUID as NVML writes it, or None."""
    u = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    if u is None:
        return None
    s = str(u)
    return s if s.startswith("GPU-") else "GPU-" + s


def check_pynvml(c, torch, uuid):
    try:
        import pynvml
    except Exception as e:
        c.note(f"pynvml does not import ({e}); its checks are skipped")
        return
    pynvml.nvmlInit()
    try:
        h = (pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid
             else pynvml.nvmlDeviceGetHandleByIndex(0))
        m = pynvml.nvmlDeviceGetMemoryInfo(h)
        free, total = torch.cuda.mem_get_info(0)
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        mine = [p.usedGpuMemory for p in procs if p.pid == os.getpid()]
        if not c.limit:
            c.check(m.total >= total, f"NVML total {m.total} >= CUDA total {total}")
            return
        c.check(m.total == c.limit, f"NVML total is the limit {c.limit} (got {m.total})")
        c.check(m.free == free, f"NVML free equals cuMemGetInfo's {free} (got {m.free})")
        c.check(m.used == m.total - m.free, f"NVML used {m.used} = total - free")
        v2 = getattr(pynvml, "nvmlMemory_v2", None)
        if v2 is not None:
            m2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=v2)
            c.check(m2.total == c.limit and m2.free == free and m2.reserved == 0,
                    f"NVML _v2: total {m2.total}, free {m2.free}, reserved {m2.reserved}")
        c.check(mine == [c.limit - free],
                f"this process's NVML entry is its charge {c.limit - free} (got {mine})")
    finally:
        pynvml.nvmlShutdown()


def smi(uuid, env):
    """nvidia-smi's (memory.total, memory.used) in MiB, or an exception."""
    cmd = ["nvidia-smi", "--query-gpu=memory.total,memory.used",
           "--format=csv,noheader,nounits"] + (["-i", uuid] if uuid else ["-i", "0"])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                         timeout=60).stdout
    total, used = (int(x) for x in out.strip().splitlines()[0].split(","))
    return total, used


def check_smi(c, uuid, tool):
    if not c.limit:
        return
    try:
        total, used = smi(uuid, dict(os.environ))
    except Exception as e:
        c.check(False, f"nvidia-smi under the preload answers ({e})")
        return
    mib = c.limit >> 20
    c.check(total == mib, f"nvidia-smi memory.total is the limit {mib} MiB (got {total})")
    c.check(1024 <= used <= mib,
            f"nvidia-smi memory.used {used} MiB holds the job's GiB, at most the limit")
    if tool:
        doc = gpumem_ps(c, tool)
        devs = gpucase.objects_with(doc, "uuid", uuid) if doc and uuid else []
        job = sum(d.get("used_bytes", 0) for d in devs)
        if c.check(bool(devs), "gpumem ps --json shows the job on this card"):
            c.check(abs(used - (job >> 20)) <= 2,
                    f"nvidia-smi memory.used {used} MiB = gpumem ps's {job >> 20} MiB "
                    f"on the card within 2 MiB")
    # Under the preload without a limit: what nvidia-smi shows without it.
    plain = {k: v for k, v in os.environ.items()
             if k != "LD_PRELOAD" and not k.startswith("GPUMEM_")}
    nolimit = dict(plain, LD_PRELOAD=os.environ.get("LD_PRELOAD", ""))
    try:
        a, b = smi(uuid, plain), smi(uuid, nolimit)
        c.check(a[0] == b[0] and abs(a[1] - b[1]) <= 4,
                f"without a limit nvidia-smi under the preload {b} = without it {a} "
                f"(used within 4 MiB)")
    except Exception as e:
        c.check(False, f"nvidia-smi without a limit answers ({e})")


def case_nvml(c, tool):
    torch = start(c)
    b = tensor(torch, 1 << 30)
    torch.cuda.synchronize()
    uuid = device_uuid(torch)
    check_pynvml(c, torch, uuid)
    check_smi(c, uuid, tool)
    del b


def main():
    args = gpucase.parse(__doc__, ["oom", "ps", "nccl", "nvml", "leak", "steady",
                                     "exporter", "visible"])
    c = gpucase.Case(f"torch_{args.case}", args.expect_limit)
    if args.case == "oom":
        case_oom(c)
    elif args.case == "ps":
        if not args.gpumem:
            c.skip("no --gpumem PATH given")
        case_ps(c, args.gpumem)
    elif args.case == "nvml":
        case_nvml(c, args.gpumem)
    elif args.case == "visible":
        case_visible(c)
    elif args.case in ("leak", "steady", "exporter"):
        if not args.gpumem:
            c.skip("no --gpumem PATH given")
        {"leak": case_leak, "steady": case_steady,
         "exporter": case_exporter}[args.case](c, args.gpumem)
    else:
        case_nccl(c)
    c.finish()


if __name__ == "__main__":
    main()

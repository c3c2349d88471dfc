"""tests/gpu/cupy_check.py — CuPy under the shim.

Case oom: memGetInfo and getDeviceProperties report the limit; 256 MiB
arrays until the limit raise cupy.cuda.memory.OutOfMemoryError (not another
error), below the limit and only near the reported free memory; one array
larger than the limit raises it too; no drift once the pool is emptied.
Without the shim: an array is usable and the pool empties.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402

MIB = gpucase.MIB
BLOCK = 256 * MIB


def main():
    args = gpucase.parse(__doc__, ["oom"])
    c = gpucase.Case("cupy_oom", args.expect_limit)
    try:
        import cupy
    except Exception as e:
        c.skip(f"cupy does not import: {e}")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        c.skip(f"cupy sees no CUDA device: {e}")
    if n == 0:
        c.skip("cupy sees no CUDA device")
    c.note(f"cupy {cupy.__version__}")
    rt = cupy.cuda.runtime
    pool = cupy.get_default_memory_pool()
    free0, total = rt.memGetInfo()
    prop = rt.getDeviceProperties(0)["totalGlobalMem"]
    a = cupy.empty(BLOCK, dtype=cupy.uint8)
    rt.memset(a.data.ptr, 1, a.nbytes)
    c.check(int(a[-1].item()) == 1, "a 256 MiB array is usable")
    del a
    pool.free_all_blocks()
    if not c.limit:
        c.check(total > 0 and prop > 0, f"memGetInfo total {total}, totalGlobalMem {prop}")
        c.finish()
    c.check(total == c.limit, f"memGetInfo total is the limit {c.limit} (got {total})")
    c.check(prop == c.limit, f"totalGlobalMem is the limit (got {prop})")
    held, raised, other = [], None, None
    try:
        for _ in range(64):
            held.append(cupy.empty(BLOCK, dtype=cupy.uint8))
    except cupy.cuda.memory.OutOfMemoryError as e:
        raised = e
    except Exception as e:
        other = e
    got = len(held) * BLOCK
    c.check(other is None, f"no error other than OutOfMemoryError ({other!r})")
    c.check(raised is not None, f"OutOfMemoryError raised after {got >> 20} MiB")
    c.check(got < c.limit, f"held {got >> 20} MiB < limit {c.limit >> 20} MiB")
    c.check(got + 2 * BLOCK > free0,
            f"refused only near the reported free memory ({got >> 20} of {free0 >> 20} MiB)")
    held.clear()
    pool.free_all_blocks()
    try:
        cupy.empty(c.limit + 1, dtype=cupy.uint8)
        c.check(False, "an array of limit + 1 bytes is refused")
    except cupy.cuda.memory.OutOfMemoryError:
        c.check(True, "an array of limit + 1 bytes raises OutOfMemoryError")
    except Exception as e:
        c.check(False, f"an array of limit + 1 bytes raised {e!r}")
    pool.free_all_blocks()
    free1 = rt.memGetInfo()[0]
    c.check(abs(free1 - free0) <= 2 * MIB, f"no drift: free {free1}, was {free0}")
    c.finish()


if __name__ == "__main__":
    main()

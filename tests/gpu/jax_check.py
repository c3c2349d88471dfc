"""tests/gpu/jax_check.py — JAX (XLA) under the shim.

Case prealloc: with JAX's defaults (preallocation on, fraction 0.75), XLA
sizes its pool from the device total that cuMemGetInfo reports, so under
the shim it must take 75% of the limit, not of the card: memory_stats()
'bytes_limit' is 0.75 x limit (within 2% of the limit), a computation runs,
and the shim's own count (cuMemGetInfo through ctypes, i.e. dlsym on
libcuda, on the primary context) shows that pool charged: used >= the pool,
used <= the limit. Without the shim: preallocation off, a computation runs
and the ctypes query works.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucase  # noqa: E402

XLA_VARS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
            "XLA_PYTHON_CLIENT_ALLOCATOR")


def driver_meminfo(c):
    """(free, total) from libcuda's cuMemGetInfo_v2 on the primary context."""
    cu = ctypes.CDLL("libcuda.so.1")
    dev, ctx, old = ctypes.c_int(0), ctypes.c_void_p(), ctypes.c_void_p()
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    rc = cu.cuInit(0)
    rc = rc or cu.cuDeviceGet(ctypes.byref(dev), 0)
    rc = rc or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    if rc:
        c.check(False, f"primary context through ctypes (CUresult {rc})")
        return None
    rc = cu.cuCtxPushCurrent_v2(ctx)
    rc = rc or cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    cu.cuCtxPopCurrent_v2(ctypes.byref(old))
    cu.cuDevicePrimaryCtxRelease_v2(dev)
    if not c.check(rc == 0, f"cuMemGetInfo_v2 through ctypes succeeds (CUresult {rc})"):
        return None
    return free.value, total.value


def main():
    args = gpucase.parse(__doc__, ["prealloc"])
    c = gpucase.Case("jax_prealloc", args.expect_limit)
    for v in XLA_VARS:
        os.environ.pop(v, None)
    if not c.limit:
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        c.skip(f"jax does not import: {e}")
    try:
        devs = jax.devices("gpu")
    except Exception as e:
        c.skip(f"jax has no GPU backend: {e}")
    dev = devs[0]
    c.note(f"jax {jax.__version__} on {dev.device_kind}")
    a = jax.device_put(jnp.ones((1024, 1024), dtype=jnp.float32), dev)
    r = (a @ a).block_until_ready()
    c.check(float(r[0, 0]) == 1024.0, "a 1024 x 1024 matmul runs")
    stats = dev.memory_stats() or {}
    limit = stats.get("bytes_limit", 0)
    info = driver_meminfo(c)
    if not c.limit:
        c.note(f"memory_stats() bytes_limit without preallocation: {limit}")
        if info:
            c.check(info[1] > 0, f"cuMemGetInfo total {info[1]}")
        c.finish()
    want = 0.75 * c.limit
    c.check(abs(limit - want) <= 0.02 * c.limit,
            f"XLA pool bytes_limit {limit} is 75% of the limit ({int(want)}) within 2%")
    if info:
        free, total = info
        used = total - free
        c.check(total == c.limit, f"cuMemGetInfo total is the limit (got {total})")
        c.check(limit <= used <= c.limit,
                f"the shim counts the preallocated pool: used {used}, pool {limit}")
    c.finish()


if __name__ == "__main__":
    main()

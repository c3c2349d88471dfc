"""gpumem.py - training steps, marks and the process's own GPU memory figures
from Python, when the program runs under libgpumem.so (LD_PRELOAD).

One file, no dependency beyond the standard library (ctypes). Copy it next
to the training script or put its directory on PYTHONPATH.

    import gpumem
    for batch in loader:
        train_step(batch)
        gpumem.step()                # one training step done
    gpumem.mark("epoch 3")           # a labelled moment in the history
    print(gpumem.used(), gpumem.peak(), gpumem.limit())

The functions call the library's exported C functions (gpumem_step,
gpumem_mark, gpumem_used, gpumem_peak, gpumem_limit), found in the
process with ctypes.CDLL(None). Without the preloaded library, step() and
mark() do nothing and return False (a script runs unchanged with or
without gpumem), used(), peak() and limit() return None, available() is
False, and require() raises RuntimeError saying so.

Figures are bytes for one device ordinal (default 0), as the library
accounts them: used() is what is charged now (context memory included),
peak() its high-water mark, limit() the limit, or None when there is none.
All three are None for a device this process has not used yet.
"""

import ctypes

__all__ = ["available", "require", "step", "mark", "used", "peak", "limit"]

_LABEL_MAX = 39  # bytes kept of a label (UTF-8, cut at a character)


def _load():
    try:
        lib = ctypes.CDLL(None)
        fns = {}
        for name in ("gpumem_step", "gpumem_mark", "gpumem_used",
                     "gpumem_peak", "gpumem_limit"):
            fns[name] = getattr(lib, name)
    except (OSError, AttributeError):
        return None
    fns["gpumem_step"].restype = None
    fns["gpumem_step"].argtypes = []
    fns["gpumem_mark"].restype = None
    fns["gpumem_mark"].argtypes = [ctypes.c_char_p]
    for name in ("gpumem_used", "gpumem_peak", "gpumem_limit"):
        fns[name].restype = ctypes.c_longlong
        fns[name].argtypes = [ctypes.c_int]
    return fns


_fns = _load()


def available():
    """True when libgpumem.so is loaded in this process."""
    return _fns is not None


def require():
    """Raise RuntimeError unless libgpumem.so is loaded in this process."""
    if _fns is None:
        raise RuntimeError(
            "gpumem: libgpumem.so is not loaded in this process; run the "
            "program with LD_PRELOAD=/path/to/libgpumem.so")


def step():
    """Count one training step. Returns True when recorded."""
    if _fns is None:
        return False
    _fns["gpumem_step"]()
    return True


def _label_bytes(label):
    if label is None:
        return None
    if isinstance(label, bytes):
        raw = label
    else:
        raw = str(label).encode("utf-8", "replace")
    # The library keeps 39 bytes; cut here at a character boundary too,
    # so that a long label never reaches it half a character short.
    if len(raw) > _LABEL_MAX:
        raw = raw[:_LABEL_MAX]
        while raw and (raw[-1] & 0xC0) == 0x80:
            raw = raw[:-1]
        if raw and raw[-1] >= 0xC0:
            raw = raw[:-1]
    return raw.replace(b"\0", b"?")


def mark(label):
    """Record a labelled moment (str or bytes; None for no label).
    Returns True when recorded."""
    if _fns is None:
        return False
    _fns["gpumem_mark"](_label_bytes(label))
    return True


def _figure(name, device):
    if _fns is None:
        return None
    if not isinstance(device, int) or device < 0 or device > 63:
        raise ValueError("gpumem: device must be an ordinal from 0 to 63, "
                         "not %r" % (device,))
    v = _fns[name](device)
    return None if v < 0 else v


def used(device=0):
    """Bytes charged on the device now, or None."""
    return _figure("gpumem_used", device)


def peak(device=0):
    """High-water mark of used() on the device, or None."""
    return _figure("gpumem_peak", device)


def limit(device=0):
    """The device's limit in bytes, or None (no limit, or unknown)."""
    v = _figure("gpumem_limit", device)
    return None if v == 0 else v

/*
 * policy/visible.h — CUDA_VISIBLE_DEVICES as the driver reads it: which
 * physical devices a process sees, in which order.
 *
 * Pure C, no CUDA types. Shared by the simulated driver (which applies the
 * variable as a real driver does) and the shim's NVML view in a process
 * that never loads CUDA (which must know which CUDA ordinal an NVML device
 * would have).
 */
#ifndef GM_VISIBLE_H
#define GM_VISIBLE_H

/* Maps CUDA ordinals to physical indices. `cvd` is the variable's value
 * (NULL: unset, every device in physical order). `uuids[i]` is physical
 * device i's UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". Entries
 * are comma-separated, spaces around them ignored: a decimal physical
 * index, or "GPU-" followed by a prefix of exactly one device's UUID. As
 * with the driver, the list ends at the first entry that names no device,
 * names one twice or is ambiguous; later entries are ignored. Writes
 * phys[0..k) and returns k (0..n). */
int gm_visible_map(const char *cvd, const char *const *uuids, int n, int *phys);

#endif

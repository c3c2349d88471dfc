/*
 * shim/telemetry/jobuse.h — what the live gpumem processes of a job hold
 * on one physical device, read from their segments: the NVML view of a
 * process that never uses CUDA (nvidia-smi in a limited job) shows it as
 * the device's used memory.
 *
 * The job: the segments "<prefix>.<pid>" and "<prefix>.<pid>.ns<inode>" of
 * `dir` that are regular files owned by `uid`, of this ABI version, still
 * open (closed_ns 0), whose writer still holds the segment's lock (a dead
 * or exec'd writer does not) and, for a writer of the caller's pid
 * namespace, is alive with the start time it recorded; of the caller's
 * pid namespace as recorded (a container's processes, not the host's
 * sharing its directory; unknown on either side counts); when `job_id` is
 * not empty (SLURM_JOB_ID), only those whose recorded Slurm job is the
 * same. Their device blocks with the UUID asked are summed (`used`).
 * Invariants: files are read with pread only, never mapped, so a
 * truncated or foreign file is skipped and never faults; a device block
 * is re-read until no writer is inside it, at most GM_JOBUSE_TRIES times
 * (then its last copy counts); at most GM_JOBUSE_MAX of the caller's
 * files are opened (another user's files never count toward it).
 */
#ifndef GM_JOBUSE_H
#define GM_JOBUSE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define GM_JOBUSE_TRIES 16u
#define GM_JOBUSE_MAX 4096u

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (NVML's and CUDA's text
 * form; the prefix optional) -> its 16 bytes; false for anything else. */
bool gm_uuid_parse(const char *text, unsigned char out[16]);

/* The bytes the job's processes are charged on the device with `uuid`;
 * *procs (may be NULL) gets how many processes hold any. */
uint64_t gm_job_used(const char *dir, const char *prefix, uid_t uid,
                     const char *job_id, const unsigned char uuid[16],
                     unsigned *procs);

#endif

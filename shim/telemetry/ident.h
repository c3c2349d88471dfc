/*
 * shim/telemetry/ident.h — the job identity a process records in its
 * segment (struct gm_abi_ident, shim/telemetry/abi.h): Slurm's job, step
 * and user, the Kubernetes pod namespace, name and container, the pod uid
 * and the container id from /proc/self/cgroup, the uid and the pid
 * namespace. The writer collects it once, at its first CUDA use; readers
 * copy it through gm_ident_copy, which makes every string safe again
 * whatever the file holds.
 *
 * Invariant: every string this module writes is NUL-terminated within its
 * field and holds only bytes of [A-Za-z0-9._:@+-]; any other byte becomes
 * '_', and a value too long for its field is cut (GM_ID_F_ALTERED says
 * either happened). No malloc; the only files read are /proc/self/cgroup
 * (at most GM_IDENT_CGROUP_MAX bytes), /proc/self/mountinfo when the
 * cgroup path named nothing (at most GM_IDENT_MOUNTS_MAX bytes) and the
 * /proc/self/ns/pid link.
 */
#ifndef GM_IDENT_H
#define GM_IDENT_H

#include <stdbool.h>
#include <stddef.h>

#include "shim/telemetry/abi.h"

#define GM_IDENT_CGROUP_MAX 16384u
#define GM_IDENT_MOUNTS_MAX 65536u

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO):
 * a writer there names its segment "<prefix>.<pid>"; one in any other
 * pid namespace "<prefix>.<pid>.ns<inode>" (docs/abi.md). */
#define GM_PIDNS_INIT 4026531836ull

/* The environment variables read, in order of preference. */
#define GM_IDENT_ENV_POD_NAMESPACE "GPUMEM_POD_NAMESPACE"
#define GM_IDENT_ENV_POD_NAME "GPUMEM_POD_NAME"
#define GM_IDENT_ENV_CONTAINER_NAME "GPUMEM_CONTAINER_NAME"

/* Copy src into dst[cap] keeping only safe bytes (others become '_'),
 * cut to cap-1 bytes, NUL-terminated. Returns true when the copy differs
 * from src (a byte replaced or the value cut). cap >= 1. */
bool gm_ident_clean(char *dst, size_t cap, const char *src);

/* From the text of /proc/<pid>/cgroup (n bytes, lines
 * "ID:CONTROLLERS:PATH"): the container id (64 hex digits, as docker,
 * containerd, cri-o and podman name cgroups: ".../docker/<id>",
 * ".../docker-<id>.scope", ".../cri-containerd-<id>.scope",
 * ".../crio-<id>.scope", ".../libpod-<id>.scope", ".../pod<uid>/<id>"),
 * its runtime when the path says it ("docker", "containerd", "cri-o",
 * "podman", else ""), and the Kubernetes pod uid (".../pod<uid>/..." or
 * "...-pod<uid_with_underscores>.slice"). Fields not found are left as
 * they are. Returns a mask: 1 container id found, 2 pod uid found. */
unsigned gm_ident_parse_cgroup(const char *text, size_t n,
                               struct gm_abi_ident *out);

/* From the text of /proc/<pid>/mountinfo (n bytes), for a process whose
 * cgroup path names nothing (a private cgroup namespace shows "0::/"):
 * the roots of the files a runtime bind-mounts into its containers, the
 * container id from ".../containers/<64 hex>/..." (docker) or
 * ".../overlay-containers/<64 hex>/..." (podman), the pod uid and the
 * container name from ".../pods/<uid>/containers/<name>/..." (the
 * kubelet's termination log) or the pod uid from ".../pods/<uid>/...".
 * Under Kubernetes (a pod uid found) a container id from those files is
 * the pod sandbox's and is not kept. Only fields still empty are set. Returns a mask: 1 container id, 2 pod
 * uid, 4 container name. */
unsigned gm_ident_parse_mountinfo(const char *text, size_t n,
                                  struct gm_abi_ident *out);

/* "pid:[4026531836]" -> 4026531836; 0 when the text has another form. */
unsigned long long gm_ident_parse_nslink(const char *link);

/* Fill out (zeroed first) from envp (NULL-terminated "NAME=value"
 * strings), /proc/self/cgroup (else /proc/self/mountinfo),
 * /proc/self/ns/pid and getuid(); sets GM_ID_F_SET. Uses static buffers:
 * callers serialise (one call per process, at its first CUDA use, under
 * the shim's init lock). */
void gm_ident_collect(struct gm_abi_ident *out, char *const *envp);

/* Reader side: a copy of src (possibly hostile shared memory, read once
 * byte by byte) in which every string is cleaned as above; a field that
 * needed it (a byte replaced, no NUL within it) sets GM_ID_F_ALTERED. */
void gm_ident_copy(struct gm_abi_ident *dst, const struct gm_abi_ident *src);

/* A short label for a JOB column: "JOB.STEP" (Slurm), "NAMESPACE/POD"
 * (Kubernetes), "POD" alone, the container id's first 12 digits, or "-".
 * Returns buf. */
const char *gm_ident_job(const struct gm_abi_ident *id, char *buf,
                         size_t cap);

/* Whether the identity matches want: equal to its label (above), its job
 * id, "JOB.STEP", its pod name, "NAMESPACE/POD", its container name, or
 * a prefix of 4 or more digits of its container id. */
bool gm_ident_match(const struct gm_abi_ident *id, const char *want);

#endif

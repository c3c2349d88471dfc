/*
 * policy/policy.h — the effective gpumem policy: every GPUMEM_* variable,
 * parsed once from an environment array into a read-only struct.
 *
 * Pure C, no CUDA types. gm_policy_load() never calls getenv(): it takes an
 * envp-style array so tests feed it directly and the shim passes `environ`.
 * It never allocates with malloc; all messages go into the caller's
 * struct gm_diag (fixed buffer). Invariants after a successful load:
 * every field holds a validated value; sources[] says where each came from.
 */
#ifndef GM_POLICY_H
#define GM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/base/log.h"

#define GM_MAX_DEVICES 64
#define GM_NAME_MAX 64      /* group names: [A-Za-z0-9_.-]{1,64} */
#define GM_PREFIX_MAX 32    /* shm prefix:  [A-Za-z0-9_.-]{1,32} */
#define GM_PATH_MAX 4096
#define GM_SHM_DIR_MAX 160  /* GPUMEM_SHM_DIR: an absolute path, bytes */

enum gm_limit_kind {
    GM_LIMIT_NONE = 0,  /* no limit ("0", "none", "unlimited", unset) */
    GM_LIMIT_BYTES,     /* absolute bytes */
    GM_LIMIT_PERCENT,   /* fraction of the physical total (0, 1] */
    GM_LIMIT_SHARE,     /* physical / ranks * fraction */
};

struct gm_limit {
    enum gm_limit_kind kind;
    uint64_t bytes;     /* GM_LIMIT_BYTES */
    double fraction;    /* PERCENT: pct/100; SHARE: F in (0,1] */
    unsigned ranks;     /* SHARE: local ranks found (>= 1) */
};

enum gm_mode { GM_MODE_GROW = 0, GM_MODE_STATIC, GM_MODE_STAGED };
enum gm_on_oom { GM_OOM_FAIL = 0, GM_OOM_WAIT, GM_OOM_SPILL, GM_OOM_WARN };
enum gm_report { GM_REPORT_NONE = 0, GM_REPORT_STDERR, GM_REPORT_JSON };
enum gm_bad_config { GM_BAD_EXIT = 0, GM_BAD_WARN };

/* Where a value came from. */
enum gm_source { GM_SRC_DEFAULT = 0, GM_SRC_ENV };

/* Field identifiers, one per variable (GPUMEM_LIMIT_<N> share one id). */
enum gm_field {
    GM_F_LIMIT = 0, GM_F_LIMIT_N, GM_F_MODE, GM_F_STATIC_SIZE, GM_F_WARMUP,
    GM_F_HEADROOM, GM_F_ON_OOM, GM_F_GROUP, GM_F_GROUP_LIMIT, GM_F_PRIORITY,
    GM_F_REPORT, GM_F_KEEP, GM_F_TELEMETRY, GM_F_RING_EVENTS, GM_F_SHM_PREFIX,
    GM_F_SHM_DIR, GM_F_LOG_LEVEL,
    GM_F_CUDA_LIBRARY, GM_F_ON_BAD_CONFIG, GM_F_COUNT
};

struct gm_policy {
    struct gm_limit limit;                      /* GPUMEM_LIMIT */
    struct gm_limit dev_limit[GM_MAX_DEVICES];  /* GPUMEM_LIMIT_<N> */
    bool dev_limit_set[GM_MAX_DEVICES];
    enum gm_mode mode;                          /* GPUMEM_MODE */
    /* GPUMEM_STATIC_SIZE: kind NONE = "the limit"; BYTES; PERCENT = of
     * the limit (fraction in (0,1]). */
    struct gm_limit static_size;
    uint64_t warmup_ns;                         /* GPUMEM_WARMUP, 60 s */
    double headroom;                            /* GPUMEM_HEADROOM, 0.10 */
    enum gm_on_oom on_oom;                      /* GPUMEM_ON_OOM */
    uint64_t oom_wait_ns;                       /* wait[:D], default 60 s */
    char group[GM_NAME_MAX + 1];                /* "" = none */
    struct gm_limit group_limit;
    double priority;                            /* 1.5 / 1.0 / 0.7 / weight */
    enum gm_report report;
    char report_path[GM_PATH_MAX];              /* json:PATH, %p kept as is */
    bool keep;
    bool telemetry;                             /* GPUMEM_TELEMETRY, on */
    uint32_t ring_events;                       /* power of two */
    char shm_prefix[GM_PREFIX_MAX + 1];         /* default "gpumem" */
    char shm_dir[GM_SHM_DIR_MAX + 1];           /* default "/dev/shm" */
    enum gm_log log_level;
    char cuda_library[GM_PATH_MAX];             /* default "libcuda.so.1" */
    enum gm_bad_config on_bad_config;
    enum gm_source src[GM_F_COUNT];
};

/* Diagnostics collected while loading: errors make the policy invalid,
 * warnings (unknown GPUMEM_* variables) do not. Each message is one line,
 * starting with "gpumem: ", ending with '\n'. Fixed storage, no malloc. */
#define GM_DIAG_BYTES 8192
struct gm_diag {
    unsigned errors;
    unsigned warnings;
    size_t len;
    char text[GM_DIAG_BYTES];
};

/* Fill `p` with defaults, then apply every GPUMEM_* entry of `envp`
 * (NULL-terminated "NAME=VALUE" strings; NULL means an empty environment;
 * the first entry of a name wins, as with getenv). Local-rank variables for
 * `share` are read from the same array. `d` is reset first.
 * Returns 0 when valid, -1 when diag->errors > 0. Even then every field of
 * `p` is valid: a refused variable keeps its default (source "default"), so
 * GPUMEM_ON_BAD_CONFIG=warn can run with the rest. */
int gm_policy_load(struct gm_policy *p, char *const *envp, struct gm_diag *d);

/* Defaults only. */
void gm_policy_defaults(struct gm_policy *p);

/* The limit for device `dev` (GPUMEM_LIMIT_<dev> if set, else
 * GPUMEM_LIMIT) resolved against the physical total: 0 means no limit.
 * A result above `physical` is kept as is (callers clamp where they
 * report). PERCENT/SHARE round down to a whole byte. */
uint64_t gm_policy_limit_for(const struct gm_policy *p, unsigned dev,
                             uint64_t physical);

/* Resolve any gm_limit against a base (physical total, or the limit for
 * the static size). NONE -> 0. PERCENT: floor(base * fraction); SHARE:
 * floor(base * fraction / ranks); fractions are taken to 9 decimal places
 * so "29%" of 100 is exactly 29. A limit that would round to 0 bytes
 * resolves to 1 (0 would mean "no limit"). */
uint64_t gm_limit_resolve(const struct gm_limit *l, uint64_t base);
/* True when GPUMEM_LIMIT or a GPUMEM_LIMIT_<N> sets a limit. */
bool gm_policy_has_limit(const struct gm_policy *p);
/* True when the policy promises to enforce something: a limit, a group
 * limit, or static mode's arena. */
bool gm_policy_enforces(const struct gm_policy *p);

/* Write the effective policy as text (one "NAME  value  default|env" line
 * per variable; sizes human-readable with exact bytes) or JSON (an object
 * keyed by variable name, each {"value": ..., "source": "env"|"default"}
 * plus kind-specific members) into buf; returns the length it needed
 * (snprintf-like; buf is always NUL-terminated when cap > 0). */
size_t gm_policy_format(const struct gm_policy *p, bool json, char *buf,
                        size_t cap);
/* Same; with d != NULL the JSON form also carries "valid" (no errors) and
 * "messages" (every diagnostic line). The text form ignores d. */
size_t gm_policy_format_ex(const struct gm_policy *p, const struct gm_diag *d,
                           bool json, char *buf, size_t cap);

/* One-line summary for the telemetry header, e.g.
 * "limit=4.0GiB mode=grow on_oom=fail" (snprintf-like). */
size_t gm_policy_summary(const struct gm_policy *p, char *buf, size_t cap);

/* Names for enums (for tools and messages). */
const char *gm_mode_name(enum gm_mode m);
const char *gm_on_oom_name(enum gm_on_oom o);
const char *gm_report_name(enum gm_report r);
const char *gm_log_level_name(enum gm_log l);

/* Every variable name, indexed by enum gm_field ("GPUMEM_LIMIT_<N>" for
 * GM_F_LIMIT_N); *n receives GM_F_COUNT. */
const char *const *gm_policy_var_names(size_t *n);

/* policy/suggest.c: the entry of names[0..n) closest to `word` by edit
 * distance (ASCII case-insensitive, adjacent transpositions count 1), or
 * NULL when the best distance exceeds max_dist or word is longer than 64
 * characters. Ties go to the earlier entry. No malloc. */
const char *gm_closest_name(const char *word, const char *const *names,
                            size_t n, unsigned max_dist);

#endif

/*
 * policy/policy.h — the effective gpumem policy: every GPUMEM_* variable,
 * parsed once from an environment array (after the admin policy file, and
 * with HAMi-core's variables) into a read-only struct.
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
#include "shim/base/shmfile.h"

#define GM_MAX_DEVICES 64
#define GM_NAME_MAX 64      /* group names: [A-Za-z0-9_.-]{1,64} */
#define GM_PREFIX_MAX GM_SHM_PREFIX_MAX /* gm_shm_prefix_problem's rule */
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

/* Where a value came from: built in, the environment, or the admin
 * policy file (a default it sets, or a ceiling that clamped the env). */
enum gm_source { GM_SRC_DEFAULT = 0, GM_SRC_ENV, GM_SRC_ADMIN };

/* The admin policy file, $(SYSCONFDIR)/gpumem/policy (policy/admin.c). */
#define GM_ADMIN_TEXT_MAX 65536
#define GM_TEMPLATE_MAX 256
enum gm_admin_state {
    GM_ADMIN_ABSENT = 0,    /* no file: no admin defaults or ceilings */
    GM_ADMIN_READ,          /* trusted and read (its lines may still be bad) */
    GM_ADMIN_REFUSED,       /* present but not trusted: fail closed */
};
struct gm_admin_file {
    enum gm_admin_state state;
    char path[GM_PATH_MAX];
    char why[512];          /* REFUSED: what is wrong with it */
    bool no_fd;             /* REFUSED because no descriptor was left */
    size_t len;
    char text[GM_ADMIN_TEXT_MAX + 1];   /* READ: the contents, NUL-ended */
};

/* The ceilings and rules only the admin file sets (GPUMEM_MAX_* and
 * GPUMEM_ALLOW_* / GPUMEM_FORCE_* names; docs/env.md). */
enum gm_rule {
    GM_R_MAX_LIMIT = 0, GM_R_FORCE_GROUP, GM_R_ALLOW_ON_OOM,
    GM_R_FORCE_TELEMETRY, GM_R_ALLOW_DISABLE, GM_R_COUNT
};
struct gm_admin_rules {
    bool set[GM_R_COUNT];                   /* the file names the rule */
    unsigned line[GM_R_COUNT];              /* ... at this line */
    struct gm_limit max_limit;              /* GPUMEM_MAX_LIMIT */
    char force_group[GM_TEMPLATE_MAX + 1];  /* GPUMEM_FORCE_GROUP template */
    unsigned allow_on_oom;                  /* bit 1<<gm_on_oom; 0 = all */
    bool force_telemetry;                   /* GPUMEM_FORCE_TELEMETRY=1 */
    bool allow_disable;                     /* GPUMEM_ALLOW_DISABLE=1 */
    char forced[GM_NAME_MAX + 1];           /* the group it gave, or "" */
    char force_unset[GM_TEMPLATE_MAX + 1];  /* ... not given: this variable
                                               of the template is unset */
};

/* Field identifiers, one per variable (GPUMEM_LIMIT_<N> share one id). */
enum gm_field {
    GM_F_LIMIT = 0, GM_F_LIMIT_N, GM_F_MODE, GM_F_STATIC_SIZE, GM_F_WARMUP,
    GM_F_HEADROOM, GM_F_ON_OOM, GM_F_GROUP, GM_F_GROUP_LIMIT, GM_F_PRIORITY,
    GM_F_REPORT, GM_F_KEEP, GM_F_TELEMETRY, GM_F_RING_EVENTS, GM_F_SHM_PREFIX,
    GM_F_SHM_DIR, GM_F_LOG_LEVEL, GM_F_WARN_BEFORE,
    GM_F_CUDA_LIBRARY, GM_F_ON_BAD_CONFIG, GM_F_RECORD, GM_F_NVML_VIEW,
    GM_F_COUNT
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
    uint64_t warn_before_ns;                    /* GPUMEM_WARN_BEFORE, 5 min;
                                                   0 = no forecast warning */
    char cuda_library[GM_PATH_MAX];             /* default "libcuda.so.1" */
    enum gm_bad_config on_bad_config;
    char record_dir[GM_PATH_MAX];               /* GPUMEM_RECORD, "" = off */
    bool nvml_view;                             /* GPUMEM_NVML_VIEW, on */
    enum gm_source src[GM_F_COUNT];
    /* The admin file and what it did. */
    enum gm_admin_state admin_state;
    char admin_path[GM_PATH_MAX];           /* "" when not consulted */
    struct gm_admin_rules admin;
    /* An admin-file problem (untrusted file, bad line): the process must
     * not run, whatever GPUMEM_ON_BAD_CONFIG says. */
    bool admin_fatal;
    /* A ceiling changed what the environment asked for: clamped[f], and
     * the value asked, shown by gpumem policy. */
    bool clamped[GM_F_COUNT];
    char asked[GM_F_COUNT][48];
    /* A secure-execution load (setuid/setgid, AT_SECURE): the environment
     * value of a variable that names a file or a library was ignored. */
    bool secure_ignored[GM_F_COUNT];
    /* GPUMEM_LIMIT / GPUMEM_LIMIT_<N> came from HAMi-core's
     * CUDA_DEVICE_MEMORY_LIMIT[_<N>] (policy/hami.c). */
    bool hami;
    /* ... or, when GPUMEM_LIMIT[_<N>] is set too, they cap it: the
     * scheduler's grant, which the job's own variable may tighten but not
     * lift (bytes; 0 = none; per device over all devices). */
    bool hami_capped;
    uint64_t hami_cap;
    uint64_t hami_cap_dev[GM_MAX_DEVICES];
    bool hami_shared_cache;                 /* ..._SHARED_CACHE seen, ignored */
    /* Bit d: the load said that GPUMEM_STATIC_SIZE is above device d's
     * limit (a grant, an admin ceiling or default, known in bytes), whose
     * room the arena takes; a device whose limit is known only there
     * (a percentage) says it at its first use. */
    uint64_t static_said;
    /* CUDA_DISABLE_CONTROL was honoured (the admin allows it): nothing is
     * limited. */
    bool disabled;
};

/* Diagnostics collected while loading: errors make the policy invalid,
 * warnings (unknown GPUMEM_* variables) do not. Each message is one line,
 * starting with "gpumem: ", ending with '\n'. Fixed storage, no malloc.
 * line_error[i] says whether line i goes with the errors (an error, or
 * what it leaves in force): those print whatever GPUMEM_LOG_LEVEL says. */
#define GM_DIAG_BYTES 8192
#define GM_DIAG_LINES (GM_DIAG_BYTES / 8)   /* a line is >= 9 bytes */
struct gm_diag {
    unsigned errors;
    unsigned warnings;
    size_t len;
    char text[GM_DIAG_BYTES];
    unsigned lines;
    bool line_error[GM_DIAG_LINES];
};

/* The lines of `d` to print at a log level that shows no warnings: the
 * errors and what they leave in force (and the "dropped" marker), into
 * out; returns the length (at most cap - 1, NUL-terminated). */
size_t gm_diag_errors_only(const struct gm_diag *d, char *out, size_t cap);

/* Fill `p` with defaults, then apply every GPUMEM_* entry of `envp`
 * (NULL-terminated "NAME=VALUE" strings; NULL means an empty environment;
 * the first entry of a name wins, as with getenv). Local-rank variables for
 * `share` are read from the same array. `d` is reset first.
 * Returns 0 when valid, -1 when diag->errors > 0. Even then every field of
 * `p` is valid: a refused variable keeps its default (source "default"), so
 * GPUMEM_ON_BAD_CONFIG=warn can run with the rest. */
int gm_policy_load(struct gm_policy *p, char *const *envp, struct gm_diag *d);

/* The same, after the admin policy file `a` (NULL: none; its text is
 * split in place): its GPUMEM_* lines set defaults (source "admin"), its
 * GPUMEM_MAX_* / ALLOW_* / FORCE_* lines ceilings the environment can
 * tighten but never loosen. A refused file (a->state GM_ADMIN_REFUSED)
 * or a bad line is an error with p->admin_fatal set. Errors in the file
 * are reported as "gpumem: PATH:LINE: ...". */
int gm_policy_load_ex(struct gm_policy *p, char *const *envp,
                      struct gm_admin_file *a, struct gm_diag *d);

/* gm_policy_load_ex for a program in secure-execution mode (secure
 * true: setuid/setgid, getauxval(AT_SECURE)): the environment's values of
 * the variables that name files or libraries (GPUMEM_CUDA_LIBRARY,
 * GPUMEM_REPORT=json:PATH, GPUMEM_RECORD, GPUMEM_SHM_DIR,
 * GPUMEM_SHM_PREFIX) are ignored, marked in p->secure_ignored; the admin
 * file's still apply, and so do every limit and other setting. */
int gm_policy_load_secure(struct gm_policy *p, char *const *envp,
                          struct gm_admin_file *a, bool secure,
                          struct gm_diag *d);

/* True when the policy `f` names a file or a library (ignored from the
 * environment of a secure-execution program). */
bool gm_policy_field_is_path(enum gm_field f);
/* The variable's name, e.g. "GPUMEM_REPORT". */
const char *gm_policy_field_name(enum gm_field f);

/* What the shim and the tools call: read the node's admin file
 * (gm_admin_policy_path, fixed at build time) into `a`, then
 * gm_policy_load_ex. */
int gm_policy_load_node(struct gm_policy *p, char *const *envp,
                        struct gm_admin_file *a, struct gm_diag *d);
/* The same with gm_policy_load_secure's `secure`. */
int gm_policy_load_node_secure(struct gm_policy *p, char *const *envp,
                               struct gm_admin_file *a, bool secure,
                               struct gm_diag *d);

/* policy/admin.c: "$(SYSCONFDIR)/gpumem/policy", fixed when the library
 * is built (make SYSCONFDIR=...); never taken from the environment. */
extern const char gm_admin_policy_path[];

/* Read the admin file at the absolute `path` safely: every directory
 * from / down must be owned by root and not writable by group or others
 * (unless sticky), none may be a symbolic link, and the file must be a
 * regular file owned by root, not writable by group or others, at most
 * GM_ADMIN_TEXT_MAX bytes. Sets a->state: ABSENT (no such file or
 * directory), READ, or REFUSED with a->why. Never follows a symlink. */
void gm_admin_read(const char *path, struct gm_admin_file *a);

/* Defaults only. */
void gm_policy_defaults(struct gm_policy *p);

/* The limit for device `dev` (GPUMEM_LIMIT_<dev> if set, else
 * GPUMEM_LIMIT) resolved against the physical total, held to the admin
 * ceiling (GPUMEM_MAX_LIMIT) and to HAMi-core's grant when it caps a
 * GPUMEM_LIMIT (the smallest wins): 0 means no limit.
 * A result above `physical` is kept as is (callers clamp where they
 * report). PERCENT/SHARE round down to a whole byte. */
uint64_t gm_policy_limit_for(const struct gm_policy *p, unsigned dev,
                             uint64_t physical);

/* The same, and whether a ceiling (GPUMEM_MAX_LIMIT, or HAMi-core's
 * limit over a GPUMEM_LIMIT) made it smaller. */
uint64_t gm_policy_limit_for_ex(const struct gm_policy *p, unsigned dev,
                                uint64_t physical, bool *clamped);

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
const char *gm_source_name(enum gm_source s);

/* "GPUMEM_MAX_LIMIT", ... by enum gm_rule. */
const char *gm_rule_name(enum gm_rule r);

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

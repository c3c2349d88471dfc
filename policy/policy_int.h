/*
 * policy/policy_int.h — what the parts of the policy loader share and
 * nothing outside policy/ includes: the state of one load, the option
 * table (options.c), the message helpers (load.c), the variable names,
 * and the admin-file (rules.c) and HAMi-core (hami.c) stages.
 *
 * Invariants (the loader's, see policy/policy.h): nothing here calls
 * getenv() or allocates; messages are one line each, "gpumem:
 * NAME='VALUE' what is wrong; use <accepted forms>", with the value
 * sanitised (control characters -> '?') and shortened.
 */
#ifndef GM_POLICY_INT_H
#define GM_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/parse.h"
#include "policy/policy.h"

#define PFX "GPUMEM_"
#define PFX_LEN 7
#define SHOW_MAX 80          /* value characters quoted in a message */
#define NAME_SHOW_MAX 80     /* variable-name characters in a message */
#define LINE_MAX_ 1024
#define WHAT_MAX (2 * SHOW_MAX + 64)   /* "what is wrong" phrases */

#define NS_PER_S 1000000000ull
#define VALUE_COL 34         /* text form: width of the value column */

/* State of one load. Value pointers point into the caller's envp. */
struct load {
    struct gm_policy *p;
    struct gm_diag *d;
    char *const *envp;
    const char *val[GM_F_COUNT];            /* first value seen, or NULL */
    const char *dev_val[GM_MAX_DEVICES];
    bool dev_env[GM_MAX_DEVICES];           /* dev_val[d] was applied */
    bool dev_hami[GM_MAX_DEVICES];          /* ... or HAMi-core's _<d> */
    bool bad[GM_F_COUNT];                   /* refused: default kept */
    bool refused[GM_F_COUNT];               /* the env's value did not parse */
    /* The admin file's stage: "PATH:LINE: " put after "gpumem: " in
     * every message while one of its lines is applied. */
    char where[GM_PATH_MAX + 24];
    struct gm_admin_file *admin;
    bool admin_stage;
    /* HAMi-core's values, when they gave the limits (policy/hami.c). */
    const char *hami_val;
    const char *hami_dev[GM_MAX_DEVICES];
    bool hami_refused;                      /* CUDA_DEVICE_MEMORY_LIMIT */
    bool hami_refused_dev[GM_MAX_DEVICES];  /* ... _<N> */
    /* What the admin file left before the environment was applied: the
     * values a refused or disallowed env value falls back to. */
    struct gm_limit base_group_limit;
    char base_group[GM_NAME_MAX + 1];
    enum gm_mode base_mode;
    struct gm_limit base_static;
    enum gm_on_oom base_on_oom;
    uint64_t base_oom_wait_ns;
    bool base_telemetry;
    enum gm_source base_src[GM_F_COUNT];
};

/* Kinds of parsed text, for wording parse errors. */
enum kind { K_SIZE, K_DURATION, K_NUMBER, K_INT, K_PERCENT };

/* One variable of the table: how its value is applied. Application order
 * is the table's: limits before the checks that compare against them. */
typedef bool (*apply_fn)(struct load *c, enum gm_field f, const char *name,
                         const char *val);
struct gm_pol_option {
    enum gm_field f;
    apply_fn apply;
};
extern const struct gm_pol_option gm_pol_table[]
    __attribute__((visibility("hidden")));
extern const size_t gm_pol_table_len __attribute__((visibility("hidden")));
/* "GPUMEM_LIMIT", ... by field. */
extern const char *const gm_pol_field_names[GM_F_COUNT]
    __attribute__((visibility("hidden")));

/* ---- across the parts ---------------------------------------------------- */

void gm_pol_show(const char *s, char *out, size_t cap)
    __attribute__((visibility("hidden")));
void gm_pol_msg(struct load *c, bool error, const char *fmt, ...)
    __attribute__((visibility("hidden"), format(printf, 3, 4)));
void gm_pol_bad(struct load *c, enum gm_field f, const char *name,
                const char *val, const char *what, const char *forms)
    __attribute__((visibility("hidden")));
void gm_pol_perr_what(enum gm_perr e, enum kind k, const char *val,
                      size_t junk, char *buf, size_t cap)
    __attribute__((visibility("hidden")));
void gm_pol_bad_parse(struct load *c, enum gm_field f, const char *name,
                      const char *val, enum gm_perr e, enum kind k,
                      size_t junk, const char *forms)
    __attribute__((visibility("hidden")));
bool gm_pol_parse_limit(struct load *c, enum gm_field f, const char *name,
                        const char *val, struct gm_limit *out)
    __attribute__((visibility("hidden")));
/* Forget the admin file's GPUMEM_LIMIT_<N> defaults (the environment or
 * HAMi-core's variables gave the limit of every device). */
void gm_pol_drop_admin_devs(struct load *c)
    __attribute__((visibility("hidden")));
/* Values shown in messages and in `gpumem policy`. */
void gm_pol_limit_text(const struct gm_limit *l, char *buf, size_t cap)
    __attribute__((visibility("hidden")));

/* ---- the admin file and HAMi-core (admin.c, rules.c, hami.c) ------------- */

/* Apply the admin file's lines (a->state READ) to c->p, source admin. */
void gm_pol_admin_apply(struct load *c) __attribute__((visibility("hidden")));
/* After the environment: hold it to the admin ceilings and rules. */
void gm_pol_admin_enforce(struct load *c) __attribute__((visibility("hidden")));
/* HAMi-core's CUDA_DEVICE_MEMORY_LIMIT[_<N>]: the limits when the
 * environment sets no GPUMEM_LIMIT nor GPUMEM_LIMIT_<N> (as_limit), else
 * caps over them. */
void gm_pol_hami_apply(struct load *c, bool as_limit)
    __attribute__((visibility("hidden")));
/* The limit a HAMi-core grant of cap bytes (0: none) leaves of l: the
 * grant when l is none or a larger size (*out set, true), else l stands
 * (false; a percentage or share is held per device once its size is
 * known). */
bool gm_pol_hami_held(const struct gm_limit *l, uint64_t cap,
                      struct gm_limit *out) __attribute__((visibility("hidden")));
/* CUDA_DISABLE_CONTROL, honoured only when the admin allows it. */
void gm_pol_hami_disable(struct load *c) __attribute__((visibility("hidden")));
/* First value of `name` in envp, or NULL. */
const char *gm_pol_env_find(char *const *envp, const char *name)
    __attribute__((visibility("hidden")));
/* [A-Za-z0-9_.-]{1,max}, with a message when not. */
bool gm_pol_check_name(struct load *c, enum gm_field f, const char *name,
                       const char *val, size_t max, const char *forms)
    __attribute__((visibility("hidden")));

#endif

/*
 * tools/spank/jobspec.h — what the Slurm plugin decides, without Slurm:
 * the site's plugstack.conf arguments, the values of --gpu-mem and
 * --gpu-mem-policy, the clamp to the site's ceiling, and the environment
 * each task gets.
 *
 * Values are checked with the library's own parser (gm_policy_load on a
 * one-entry environment), so a value the plugin accepts is a value the
 * preloaded library accepts, and the other way round. Every function
 * writes its outputs only on success and puts one message (no trailing
 * newline) into err on failure. No malloc; the loader's scratch
 * buffers are static (one thread at a time, as Slurm calls plugins).
 *
 * The job's memory (struct gm_spank_job.mem) is the job's budget on each
 * GPU of a node, shared by the job's tasks there through one group:
 *   BYTES, PERCENT  group limit = the value; each task's own limit = the
 *                   value (a task may use what its peers leave);
 *   SHARE (F)       group limit = F of the GPU; each task's own limit =
 *                   F / n of the GPU, n = the step's tasks on the node;
 *   static mode     (any of the above) each task's own limit is 1/n of
 *                   the job's, since each task takes it whole up front;
 *   NONE            nothing is set (only without a site ceiling).
 */
#ifndef GM_SPANK_JOBSPEC_H
#define GM_SPANK_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define GM_SPANK_ERR_MAX 640
#define GM_SPANK_LIB_DEFAULT "/usr/local/lib/libgpumem.so"
#define GM_SPANK_GROUP_PREFIX "slurm-"

/* The accepted forms, as the option's messages and help name them. */
extern const char gm_spank_mem_forms[];
extern const char gm_spank_policy_forms[];

/* On-OOM policies as a bit set (1u << enum gm_on_oom). */
#define GM_SPANK_OOM_BIT(o) (1u << (unsigned)(o))
#define GM_SPANK_OOM_ALL 0xfu

/* --gpu-mem-policy: which keys were given. */
struct gm_spank_pol {
    bool mode_set, on_oom_set;
    enum gm_mode mode;
    enum gm_on_oom on_oom;
    char on_oom_text[48];       /* as written, e.g. "wait:30s" */
};

/* The site (plugstack.conf arguments). */
struct gm_spank_site {
    bool has_default;           /* default=VALUE */
    struct gm_limit def;
    char def_text[64];
    bool has_max;               /* max=SIZE|NN% */
    struct gm_limit max;
    char max_text[64];
    char lib[GM_PATH_MAX];      /* lib=PATH (absolute) */
    char prefix[GM_PREFIX_MAX + 1]; /* prefix=NAME, default "gpumem" */
    unsigned allow_oom;         /* allow-on-oom=LIST, default fail,wait */
    struct gm_spank_pol def_pol; /* default-policy=... */
};

/* One job's request after the site's rules. */
struct gm_spank_job {
    bool active;                /* false: the plugin sets nothing */
    struct gm_limit mem;        /* the job's budget per GPU (after clamp) */
    char mem_text[64];          /* as the user wrote it (or the default) */
    bool by_default;            /* no --gpu-mem: mem is the site's default= */
    bool clamped;               /* mem was lowered to the ceiling */
    bool mixed;                 /* mem and the ceiling have different units:
                                   the group limit is the ceiling */
    struct gm_spank_pol pol;    /* after the site's default policy */
};

/* Parse the plugstack.conf arguments into *site (defaults first). */
int gm_spank_site_parse(struct gm_spank_site *site, int ac,
                        char *const *av, char *err, size_t cap);

/* --gpu-mem=VALUE: SIZE, NN%, share[:F] or none. `opt` names the option
 * (or argument) in messages. */
int gm_spank_mem_parse(const char *opt, const char *val,
                       struct gm_limit *out, char *err, size_t cap);

/* --gpu-mem-policy=KEY=VALUE[,KEY=VALUE]: mode=grow|static|staged,
 * on-oom=fail|wait[:D]|spill|warn, the on-oom value within `allow`. */
int gm_spank_pol_parse(const char *opt, const char *val, unsigned allow,
                       struct gm_spank_pol *out, char *err, size_t cap);

/* The job from the site and the user's values (mem / pol may be NULL:
 * not given). Fails on a policy the site does not allow, or when the
 * library refuses the variables of a one-task step (the task count of a
 * node is checked by gm_spank_task_vars). */
int gm_spank_job_make(const struct gm_spank_site *site, const char *mem,
                      const char *pol, struct gm_spank_job *job, char *err,
                      size_t cap);

/* The line telling the user what the ceiling did to the request ("" when
 * nothing happened), naming the site's default= when the job gave no
 * --gpu-mem (a default above the ceiling is the site's mistake, said as
 * one); with a ceiling of another unit it says what each
 * task is held to, by the rule of gm_spank_task_vars (a split as the
 * job's value divided by the node's tasks, unknown at submission);
 * snprintf-like. */
size_t gm_spank_job_notice(const struct gm_spank_site *site,
                           const struct gm_spank_job *job, char *buf,
                           size_t cap);

/* One variable a task gets. */
struct gm_spank_var {
    const char *name;
    char value[GM_PATH_MAX + 128];
};
#define GM_SPANK_VARS 8

/* The variables of one task: GPUMEM_LIMIT, GPUMEM_GROUP,
 * GPUMEM_GROUP_LIMIT, GPUMEM_MODE, GPUMEM_ON_OOM, GPUMEM_SHM_PREFIX and
 * LD_PRELOAD (the library prepended to `preload`, the task's current
 * value or NULL, unless it is already one of its entries). `ntasks` is
 * the step's task count on the node (0 is taken as 1). The variables are
 * loaded together by the library's loader, as the task will: a value it
 * refuses (a share split so finely that each task's part is below one
 * part in a billion of the GPU) fails here, with the value, the task
 * count and the most tasks the value allows. Returns how many were
 * written to vars[0..GM_SPANK_VARS), or -1 with err. */
int gm_spank_task_vars(const struct gm_spank_site *site,
                       const struct gm_spank_job *job, uint32_t jobid,
                       uint32_t ntasks, const char *preload,
                       struct gm_spank_var *vars, char *err, size_t cap);

/* A variable of the job's environment a task loses before its own are
 * set: every GPUMEM_LIMIT_<N> (N < GM_MAX_DEVICES), which would override
 * the job's limit on one device, and, for a job without a limit
 * (--gpu-mem=none with a policy), GPUMEM_LIMIT, GPUMEM_GROUP and
 * GPUMEM_GROUP_LIMIT: no limit, no group (a group without its limit
 * would stop the task at its first CUDA call). Returns how many names
 * were written to out[0..GM_SPANK_UNSET_MAX). */
struct gm_spank_unset {
    char name[32];
};
#define GM_SPANK_UNSET_MAX (GM_MAX_DEVICES + 3)
int gm_spank_task_unset(const struct gm_spank_job *job,
                        struct gm_spank_unset *out);

/* A limit as the library's variables write it: bytes as a plain number,
 * a percentage with up to 9 decimals ("50%", "33.333333333%"). */
size_t gm_spank_limit_text(const struct gm_limit *l, double scale, char *buf,
                           size_t cap);

#endif

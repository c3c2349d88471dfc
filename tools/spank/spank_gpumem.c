/*
 * tools/spank/spank_gpumem.c — spank_gpumem.so, the Slurm SPANK plugin:
 * --gpu-mem and --gpu-mem-policy for srun, sbatch and salloc, and in each
 * task the library's variables and LD_PRELOAD (decisions in jobspec.c).
 *
 * Contexts: the options are registered in every context from
 * slurm_spank_init; in srun, sbatch and salloc (local, allocator) the
 * option callback refuses a bad value at submission and init_post_opt
 * prints what the ceiling did; in slurmstepd (remote) the values are
 * checked again (the client is not trusted) and slurm_spank_task_init sets
 * each task's environment just before it runs. Any failure there fails
 * the task: a job this plugin cannot limit does not run unlimited. At the
 * end of a step, slurm_spank_exit removes the job's group file when no
 * member is left (tasks killed by scancel or a time limit cannot).
 */
#include <slurm/spank.h>

#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/group/group.h"
#include "tools/spank/jobspec.h"

SPANK_PLUGIN(gpumem, 1);

/* One job per process in every context: the option values and the site
 * are set once (init, then the callbacks), read later by the same thread. */
static struct gm_spank_site site;
static char opt_mem[256], opt_pol[256];
static int have_mem, have_pol;

static int keep(char *dst, size_t cap, const char *v, const char *opt,
                const char *forms)
{
    if (v == NULL || strlen(v) >= cap) {
        slurm_error("gpumem: %s needs a value of at most %zu characters; %s",
                    opt, cap - 1, forms);
        return -1;
    }
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int cb_mem(int val, const char *optarg, int remote)
{
    struct gm_limit l;
    char err[GM_SPANK_ERR_MAX];

    (void)val;
    (void)remote;
    if (keep(opt_mem, sizeof opt_mem, optarg, "--gpu-mem",
             gm_spank_mem_forms) != 0)
        return -1;
    if (gm_spank_mem_parse("--gpu-mem", opt_mem, &l, err, sizeof err) != 0) {
        slurm_error("gpumem: %s", err);
        return -1;
    }
    have_mem = 1;
    return 0;
}

static int cb_pol(int val, const char *optarg, int remote)
{
    struct gm_spank_pol p;
    char err[GM_SPANK_ERR_MAX];

    (void)val;
    (void)remote;
    memset(&p, 0, sizeof p);
    if (keep(opt_pol, sizeof opt_pol, optarg, "--gpu-mem-policy",
             gm_spank_policy_forms) != 0)
        return -1;
    if (gm_spank_pol_parse("--gpu-mem-policy", opt_pol, site.allow_oom, &p,
                           err, sizeof err) != 0) {
        slurm_error("gpumem: %s", err);
        return -1;
    }
    have_pol = 1;
    return 0;
}

static struct spank_option opt_table[] = {
    { "gpu-mem", "SIZE|NN%|share[:F]",
      "GPU memory for the job on each GPU of a node, shared by its tasks "
      "there (gpumem): SIZE (512M, 40G) or NN% of the GPU, which any one "
      "task may use up to, or share[:F], F of the GPU (default 1) split "
      "evenly among the tasks. A task sees its limit as the GPU's size.",
      1, 0, cb_mem },
    { "gpu-mem-policy", "mode=M,on-oom=P",
      "gpumem growth mode (grow, static, staged) and what an allocation past "
      "the limit gets (fail, wait[:DURATION], ...), e.g. "
      "mode=static,on-oom=wait:30s.",
      1, 1, cb_pol },
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    char err[GM_SPANK_ERR_MAX];
    size_t i;

    if (gm_spank_site_parse(&site, ac, av, err, sizeof err) != 0) {
        slurm_error("gpumem: plugstack.conf: %s", err);
        return -1;
    }
    for (i = 0; i < sizeof opt_table / sizeof opt_table[0]; i++)
        if (spank_option_register(sp, &opt_table[i]) != ESPANK_SUCCESS) {
            slurm_error("gpumem: cannot register --%s", opt_table[i].name);
            return -1;
        }
    return 0;
}

static int make_job(struct gm_spank_job *job)
{
    char err[GM_SPANK_ERR_MAX];

    if (gm_spank_job_make(&site, have_mem ? opt_mem : NULL,
                          have_pol ? opt_pol : NULL, job, err,
                          sizeof err) != 0) {
        slurm_error("gpumem: %s", err);
        return -1;
    }
    return 0;
}

/* srun, sbatch, salloc: say what the ceiling did, once, at submission. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    struct gm_spank_job job;
    char note[GM_SPANK_ERR_MAX];
    spank_context_t ctx = spank_context();

    (void)sp;
    (void)ac;
    (void)av;
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
        return 0;
    if (make_job(&job) != 0)
        return -1;
    if (gm_spank_job_notice(&site, &job, note, sizeof note) > 0)
        slurm_spank_log("%s", note);
    return 0;
}

/* The task, just before exec, as the job's user. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    struct gm_spank_job job;
    static struct gm_spank_var vars[GM_SPANK_VARS];
    static struct gm_spank_unset drop[GM_SPANK_UNSET_MAX];
    char err[GM_SPANK_ERR_MAX], old[GM_PATH_MAX];
    uint32_t jobid = 0, ntasks = 0;
    spank_err_t rc;
    int n, u, i;

    (void)ac;
    (void)av;
    if (!spank_remote(sp))
        return 0;
    if (make_job(&job) != 0)
        return -1;
    if (!job.active)
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
        slurm_error("gpumem: cannot read the job id; the task is not started");
        return -1;
    }
    if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
        ntasks = 1;
    if (access(site.lib, R_OK) != 0) {
        slurm_error("gpumem: the library %s is not readable on this node; "
                    "the task is not started (install it, or set lib= in "
                    "plugstack.conf)", site.lib);
        return -1;
    }
    rc = spank_getenv(sp, "LD_PRELOAD", old, sizeof old);
    if (rc == ESPANK_NOSPACE) {
        slurm_error("gpumem: the task's LD_PRELOAD is longer than %zu "
                    "characters; the task is not started", sizeof old - 1);
        return -1;
    }
    n = gm_spank_task_vars(&site, &job, jobid, ntasks,
                           rc == ESPANK_SUCCESS ? old : NULL, vars, err,
                           sizeof err);
    if (n < 0) {
        slurm_error("gpumem: %s; the task is not started", err);
        return -1;
    }
    u = gm_spank_task_unset(&job, drop);
    for (i = 0; i < u; i++)
        spank_unsetenv(sp, drop[i].name);
    for (i = 0; i < n; i++)
        if (spank_setenv(sp, vars[i].name, vars[i].value, 1) != ESPANK_SUCCESS) {
            slurm_error("gpumem: cannot set %s for the task; the task is not "
                        "started", vars[i].name);
            return -1;
        }
    return 0;
}

/* The group file of a job whose members all died (killed tasks never
 * leave): removed as the job's user, whom the file belongs to
 * (gm_group_gc refuses another user's file), in a child so slurmstepd
 * keeps its privileges. A group with live members (another step) stays. */
static void group_gc(uint32_t jobid, uid_t uid, gid_t gid)
{
    char path[GM_PATH_MAX], err[GM_SPANK_ERR_MAX];
    int status = 0;

    snprintf(path, sizeof path, "/dev/shm/%s.group@" GM_SPANK_GROUP_PREFIX "%u",
             site.prefix, (unsigned)jobid);
    if (access(path, F_OK) != 0)
        return;     /* the usual case: the last member removed it */
    pid_t pid = fork();
    if (pid < 0) {
        slurm_error("gpumem: cannot remove %s: fork: %m", path);
        return;
    }
    if (pid == 0) {
        if (geteuid() != uid &&
            (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0))
            _exit(2);
        int rc = gm_group_gc(path, err, sizeof err);
        if (rc < 0)
            slurm_error("gpumem: cannot remove %s: %s", path, err);
        _exit(rc < 0 ? 1 : 0);
    }
    /* gm_group_gc bounds its own waits (the group lock: 2 s). */
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            slurm_error("gpumem: cannot wait for the group cleanup: %s",
                        strerror(errno));
            return;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
        slurm_error("gpumem: cannot remove %s: cannot become uid %u",
                    path, (unsigned)uid);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    struct gm_spank_job job;
    char err[GM_SPANK_ERR_MAX];
    uint32_t jobid = 0;
    uid_t uid;
    gid_t gid;

    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    if (gm_spank_job_make(&site, have_mem ? opt_mem : NULL,
                          have_pol ? opt_pol : NULL, &job, err,
                          sizeof err) != 0 ||
        !job.active || job.mem.kind == GM_LIMIT_NONE)
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
        return 0;
    group_gc(jobid, uid, gid);
    return 0;
}

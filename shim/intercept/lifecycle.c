/*
 * shim/intercept/lifecycle.c — lifecycle: the (empty) constructor, one-time initialisation
 * at first CUDA use, fork handling, and the exit report.
 *
 * Invariants: a process that never calls a CUDA entry point runs no code of
 * ours beyond the dynamic linker's relocation of this library: no thread,
 * no file, no segment, no allocation. Initialisation runs exactly once per
 * process image (gm_init_state 0 -> 1 -> 2|3 under init_lock); a thread
 * that re-enters while it is initialising (the driver's constructor calling
 * back) sees state 1 and passes through. After fork the child forgets the
 * parent's segment and accounting and initialises afresh at its own first
 * CUDA use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/base/safefile.h"
#include "shim/intercept/lifecycle.h"
#include "shim/admit/arena_hooks.h"
#include "shim/driver/real.h"
#include "shim/telemetry/ident.h"
#include "shim/telemetry/report.h"
#include "shim/telemetry/forecast.h"
#include "shim/telemetry/hist.h"
#include "shim/telemetry/trend.h"
#include "shim/account/state.h"
#include "shim/account/commit.h"
#include "shim/account/contexts.h"
#include "shim/account/grouphook.h"
#include "shim/account/release.h"
#include "shim/account/pools.h"
#include "shim/admit/staged.h"
#include "shim/account/track.h"
#include "shim/record/record.h"

_Atomic int gm_init_state;
_Atomic int gm_plain_ready;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(pthread_t) init_owner;
static int atfork_registered;

extern char **environ;


static void expand_pid(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; in[i] != '\0' && o + 1 < cap; i++) {
        if (in[i] == '%' && in[i + 1] == 'p') {
            int k = snprintf(out + o, cap - o, "%ld", (long)getpid());
            if (k < 0 || (size_t)k >= cap - o)
                break;
            o += (size_t)k;
            i++;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
}

/* The standard output or error the path names (json:/dev/stdout,
 * /dev/fd/2, ...): the descriptor, else -1. Only these are written
 * through a link: they are the process's own, not a file someone planted. */
static int own_stream(const char *path)
{
    struct stat p, f;
    if (stat(path, &p) != 0 || S_ISREG(p.st_mode))
        return -1;
    for (int fd = 1; fd <= 2; fd++)
        if (fstat(fd, &f) == 0 && f.st_dev == p.st_dev && f.st_ino == p.st_ino)
            return fd;
    return -1;
}

/* The leak verdict of each device whose last minute of history grows
 * (the forecast warning's fit, shim/telemetry/forecast.c), one line each
 * after the devices' lines of a text report; n is what buf holds. */
static size_t verdict_lines(const struct gm_tw *w, char *buf, size_t cap,
                            size_t n)
{
    for (unsigned i = 0; i < w->hist_slots && i < GM_MAX_DEVICES; i++) {
        struct gm_trend r;
        char line[512];
        if (atomic_load(&gm_st.dev[i].ready) != 2 ||
            !gm_forecast_trend(w, i, &r))
            continue;
        gm_trend_format(line, sizeof line, i, &r, NULL);
        if (n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "gpumem: %s\n", line);
    }
    return n < cap ? n : cap;
}

static void exit_report(void)
{
    const struct gm_policy *p = &gm_st.policy;
    if (p->report == GM_REPORT_NONE || gm_st.tel.hdr == NULL)
        return;
    static char buf[65536];
    bool held = gm_tel_hold_writers(&gm_st.tel);
    size_t n = gm_report_from_segment(&gm_st.tel,
                                      p->report == GM_REPORT_JSON, buf,
                                      sizeof buf);
    if (n >= sizeof buf) { /* cut short: still a line of its own */
        n = sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    if (p->report != GM_REPORT_JSON)
        n = verdict_lines(&gm_st.tel.w, buf, sizeof buf - 1, n);
    if (held)
        gm_tel_release_writers(&gm_st.tel);
    if (p->report == GM_REPORT_STDERR) {
        n += gm_grp_report(buf + n, sizeof buf - n);
        (void)gm_write_all(STDERR_FILENO, buf, n);
        return;
    }
    /* Appended, one line per process, so that every process of a command
     * keeps its report; never through a symlink, never readable by
     * others: the report holds the command line, as the 0600 segment
     * does. */
    char path[GM_PATH_MAX], err[GM_PATH_MAX + 128];
    expand_pid(p->report_path, path, sizeof path);
    int fd = own_stream(path);
    if (fd >= 0) {
        (void)gm_write_all(fd, buf, n);
        return;
    }
    if (gm_file_append(path, buf, n, err, sizeof err) != 0)
        gm_log(GM_LOG_ERROR, "the report is lost: %s", err);
}

static void at_exit(void)
{
    if (atomic_load_explicit(&gm_init_state, memory_order_acquire) != 2)
        return;
    gm_depth++;
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        struct gm_dev *d = &gm_st.dev[i];
        if (atomic_load(&d->ready) == 2) {
            gm_acct_frag_sync(i);
            gm_tel_sync(&gm_st.tel, i, gm_budget_used(&d->budget),
                        gm_budget_peak(&d->budget));
        }
    }
    exit_report();
    gm_rec_close();
    gm_grp_leave();
    gm_tel_close(&gm_st.tel, gm_st.policy.keep);
    gm_depth--;
}

static void fork_child(void)
{
    /* The child owns nothing of the parent's: not its segment, not its
     * allocations (CUDA state does not survive fork), not its counters. */
    gm_tel_forget(&gm_st.tel);
    gm_rec_fork_child();
    gm_grp_forget();
    gm_track_reset();
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        struct gm_dev *d = &gm_st.dev[i];
        atomic_store(&d->budget.used, 0);
        atomic_store(&d->budget.peak, 0);
        atomic_store(&d->budget.limit, 0);
        atomic_store(&d->ctx_measured, 0);
        if (atomic_load(&d->ready) == 2)
            gm_fragq_destroy(&d->frag);
        d->arena = NULL;
        d->physical = 0;
        atomic_store(&d->ready, 0);
    }
    gm_release_reset();
    gm_static_reset();
    gm_dev_reset();
    gm_ctx_reset();
    gm_pools_reset();
    atomic_store(&gm_staged_armed, 0);
    pthread_mutex_init(&gm_st.dev_lock, NULL);
    pthread_mutex_init(&init_lock, NULL);
    atomic_store(&gm_plain_ready, 0);
    atomic_store(&gm_init_state, 0);
}

static void open_telemetry(void)
{
    char summary[256];
    gm_policy_summary(&gm_st.policy, summary, sizeof summary);
    static struct gm_abi_ident ident;
    gm_ident_collect(&ident, environ);
    struct gm_tel_params tp = {
        .prefix = gm_st.policy.shm_prefix,
        .ring_events = gm_st.policy.ring_events,
        .policy_summary = summary,
        .mode = (uint32_t)gm_st.policy.mode,
        .on_oom = (uint32_t)gm_st.policy.on_oom,
        .shm_dir = gm_st.policy.shm_dir,
        .ident = &ident,
        .warn_before_ns = gm_st.policy.warn_before_ns,
        .forecast_silent = gm_st.policy.log_level < GM_LOG_WARN,
    };
    char err[256] = "";
    int rc = gm_tel_open(&gm_st.tel, &tp, err, sizeof err);
    if (rc != 0)
        gm_log(GM_LOG_WARN, "telemetry segment not shared (%s); limits are "
               "still enforced", err[0] ? err : "unknown reason");
}

/* The real driver: GPUMEM_CUDA_LIBRARY's, or, when that cannot be loaded
 * and the policy promises a limit, never silently nothing. A limiter
 * fails closed: with GPUMEM_ON_BAD_CONFIG=exit the process exits with
 * status 2; with warn, the limit is enforced through whatever driver the
 * program reached by itself. False: pass every call through. */
static bool load_driver(void)
{
    char err[512];
    const struct gm_policy *p = &gm_st.policy;
    if (gm_real_load(p->cuda_library, err, sizeof err) == 0)
        return true;
    if (!gm_policy_enforces(p)) {
        gm_log(GM_LOG_ERROR, "%s; no limit is set: passing calls through "
               "unaccounted", err);
        return false;
    }
    if (p->on_bad_config == GM_BAD_EXIT) {
        char msg[1024];
        int n = snprintf(msg, sizeof msg,
            "gpumem: GPUMEM_CUDA_LIBRARY='%s'%s: %s; the limit that is set "
            "cannot be enforced without the driver; exiting with status 2 "
            "(set GPUMEM_CUDA_LIBRARY to the driver's file name or path, or "
            "GPUMEM_ON_BAD_CONFIG=warn to enforce the limit through the "
            "driver the program loads)\n", p->cuda_library,
            p->src[GM_F_CUDA_LIBRARY] == GM_SRC_DEFAULT ? " (the default)"
                                                        : "", err);
        if (n > 0)
            (void)gm_write_all(STDERR_FILENO, msg,
                               (size_t)n < sizeof msg ? (size_t)n
                                                      : sizeof msg - 1);
        _exit(2);
    }
    char found[GM_PATH_MAX];
    if (gm_real_adopt(found, sizeof found) != 0) {
        gm_log(GM_LOG_ERROR, "GPUMEM_CUDA_LIBRARY: %s, and this process has "
               "loaded no other driver; calls find no driver", err);
        return false;
    }
    gm_log(GM_LOG_WARN, "GPUMEM_CUDA_LIBRARY: %s; limits are enforced "
           "through the driver this program loaded, %s", err, found);
    return true;
}

bool gm_secure_exec(void)
{
    /* The one place AT_SECURE is read: set for setuid/setgid programs and
     * those with file capabilities, where the environment is the invoking
     * user's, not the program's. */
    return getauxval(AT_SECURE) != 0;
}

void gm_secure_note(const struct gm_policy *p)
{
    static atomic_bool said;
    char names[256];
    size_t n = 0;
    names[0] = '\0';
    for (size_t i = 0; i < GM_F_COUNT; i++) {
        if (!p->secure_ignored[i] || n >= sizeof names)
            continue;
        int k = snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "",
                         gm_policy_field_name((enum gm_field)i));
        if (k > 0)
            n += (size_t)k;
    }
    if (n == 0 || atomic_exchange(&said, true))
        return;
    gm_log(GM_LOG_INFO, "secure-execution program (setuid, setgid or file "
           "capabilities): %s ignored from the environment (they name files "
           "or libraries); limits still apply", names);
}

static int init_locked(void)
{
    static struct gm_diag diag;
    static struct gm_admin_file admin;
    memset(&diag, 0, sizeof diag);
    int bad = gm_policy_load_node_secure(&gm_st.policy, environ, &admin,
                                         gm_secure_exec(), &diag);
    gm_log_set_level(gm_st.policy.log_level);
    gm_secure_note(&gm_st.policy);
    /* Warnings follow GPUMEM_LOG_LEVEL; errors, and what they leave in
     * force, always print. */
    if (gm_st.policy.log_level >= GM_LOG_WARN) {
        (void)gm_write_all(STDERR_FILENO, diag.text, diag.len);
    } else if (bad) {
        static char errs[GM_DIAG_BYTES];
        size_t n = gm_diag_errors_only(&diag, errs, sizeof errs);
        (void)gm_write_all(STDERR_FILENO, errs, n);
    }
    /* The admin's file is wrong or untrusted: no environment variable may
     * wave that through (the node's ceilings would be lifted). */
    if (bad && gm_st.policy.admin_fatal) {
        static const char msg[] = "gpumem: the admin policy file cannot be "
            "applied; exiting with status 2 (GPUMEM_ON_BAD_CONFIG does not "
            "apply to it)\n";
        (void)gm_write_all(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(2);
    }
    if (bad && gm_st.policy.on_bad_config == GM_BAD_EXIT) {
        static const char msg[] = "gpumem: bad configuration; exiting with "
            "status 2 (set GPUMEM_ON_BAD_CONFIG=warn to run with defaults "
            "instead)\n";
        (void)gm_write_all(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(2);
    }
    if (!load_driver())
        return 3;
    gm_ticks_init();
    gm_hook_clock = !gm_st.policy.telemetry ? 0 : gm_tick_tsc ? 1 : 2;
    gm_st.start_ns = gm_clock_monotonic_ns();
    if (gm_st.policy.telemetry)
        open_telemetry();
    if (gm_st.policy.record_dir[0] != '\0') {
        char err[512];
        if (gm_rec_open(gm_st.policy.record_dir, err, sizeof err) != 0)
            gm_log(GM_LOG_ERROR, "%s; this process is not recorded", err);
    }
    gm_grp_init();
    gm_staged_arm(gm_st.start_ns);
    __atomic_store_n(&gm_plain,
                     gm_st.policy.group[0] == '\0' &&
                         gm_st.policy.mode == GM_MODE_GROW &&
                         gm_st.policy.on_oom != GM_OOM_WAIT &&
                         gm_st.policy.on_oom != GM_OOM_SPILL &&
                         !__atomic_load_n(&gm_rec_on, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    if (!atfork_registered) {
        pthread_atfork(NULL, NULL, fork_child);
        atexit(at_exit);
        atfork_registered = 1;
    }
    return 2;
}

void gm_init_slow(void)
{
    int s = atomic_load_explicit(&gm_init_state, memory_order_acquire);
    if (s >= 2)
        return;
    if (s == 1 && pthread_equal(atomic_load(&init_owner), pthread_self()))
        return; /* re-entered from our own initialisation */
    gm_depth++;
    pthread_mutex_lock(&init_lock);
    if (atomic_load_explicit(&gm_init_state, memory_order_acquire) == 0) {
        atomic_store(&init_owner, pthread_self());
        atomic_store_explicit(&gm_init_state, 1, memory_order_release);
        int r = init_locked();
        atomic_store_explicit(&gm_init_state, r, memory_order_release);
        if (r == 2 && gm_is_plain())
            atomic_store_explicit(&gm_plain_ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&init_lock);
    gm_depth--;
}

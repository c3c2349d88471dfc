/*
 * shim/account/grouphook.c — wiring the group library (shim/group/) into the shim: join, per-device
 * registration, charge/release, cross-process waits, reclaim events, and
 * the group's part of the device view (gm_grp_view).
 *
 * Invariant: no call here waits on the group without an end: the library
 * bounds every wait on the group's lock, and a group that stops
 * responding turns broken (warned once), leaving the process limit.
 */
#include "shim/account/grouphook.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/telemetry/abi.h"
#include "shim/group/group.h"
#include "shim/base/log.h"
#include "shim/base/safefile.h"
#include "shim/base/shmfile.h"
#include "shim/driver/real.h"

static struct gm_group group;
static _Atomic int joined;
static int gdev_dev[GM_GROUP_MAX_DEVICES]; /* group device -> CUDA ordinal */
static _Atomic int broken_warned;

/* Runs with the group's lock held, from any thread: record only. */
static void on_reclaim(void *arg, int gdev, int pid, uint64_t bytes)
{
    (void)arg;
    /* -1: a device of the group this process has not registered (a
     * reclaim while it joins a file it moves to): not an event of ours. */
    if (gdev < 0 || gdev >= GM_GROUP_MAX_DEVICES)
        return;
    int dev = gdev_dev[gdev];
    gm_tel_event(&gm_st.tel, GM_EV_RECLAIM, (unsigned)dev, GM_API_NONE, bytes,
                 (uint64_t)pid, gm_budget_used(&gm_st.dev[dev].budget));
}

/* From the reaper, no lock held: a move to the group's file (rehome.c). */
static void on_note(void *arg, const char *text)
{
    (void)arg;
    gm_log(GM_LOG_WARN, "%s", text);
}

/* A group that cannot be joined is a limit that cannot be enforced:
 * under GPUMEM_ON_BAD_CONFIG=exit (the default) the process ends here,
 * at its first CUDA call and before any device memory is taken, with the
 * reason (its segment goes, unless GPUMEM_KEEP); under warn it runs with
 * its process limit only, warned once. */
static void cannot_join(const struct gm_policy *p, const char *why,
                        const char *fix)
{
    if (p->on_bad_config != GM_BAD_EXIT) {
        gm_log(GM_LOG_WARN, "cannot join group '%s' (%s); the group limit "
               "is not enforced in this process, running with the process "
               "limit only", p->group, why);
        return;
    }
    char line[1024];
    int n = snprintf(line, sizeof line, "gpumem: cannot join group '%s' "
                     "(%s); the group limit cannot be enforced in this "
                     "process; exiting with status 2 (%sset "
                     "GPUMEM_ON_BAD_CONFIG=warn to run with the process "
                     "limit only)\n", p->group, why, fix);
    if (n > 0)
        (void)gm_write_all(STDERR_FILENO, line,
                           (size_t)n < sizeof line ? (size_t)n
                                                   : sizeof line - 1);
    gm_tel_close(&gm_st.tel, p->keep);
    _exit(2);
}

void gm_grp_init(void)
{
    const struct gm_policy *p = &gm_st.policy;
    if (p->group[0] == '\0')
        return;
    char why[512];
    /* The group's limit lives in a file of that directory: a file others
     * could replace. */
    if (gm_shm_dir_check(p->shm_dir, geteuid(), false, why, sizeof why) != 0) {
        cannot_join(p, why, "fix GPUMEM_SHM_DIR, or ");
        return;
    }
    struct gm_group_params gp = {
        .dir = p->shm_dir, .prefix = p->shm_prefix, .name = p->group,
        .weight = p->priority, .limit = p->group_limit, .keep = p->keep,
        .on_reclaim = on_reclaim, .on_note = on_note, .arg = NULL,
    };
    char msg[512] = "";
    if (gm_group_join(&group, &gp, msg, sizeof msg) != 0) {
        cannot_join(p, msg[0] ? msg : "unknown", "");
        return;
    }
    if (msg[0])
        gm_log(GM_LOG_WARN, "%s", msg);
    gm_group_start_reaper(&group, 0);
    atomic_store(&joined, 1);
}

void gm_grp_device(int dev, struct gm_dev *d)
{
    if (!atomic_load(&joined))
        return;
    CUuuid u;
    memset(&u, 0, sizeof u);
    gm_depth++;
    CUresult rc = gm_real.cuDeviceGetUuid_v2
                      ? gm_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev)
                      : CUDA_ERROR_NOT_FOUND;
    gm_depth--;
    if (rc != CUDA_SUCCESS) {
        gm_log(GM_LOG_WARN, "device %d: no UUID (driver error %d); not in "
               "group '%s'", dev, (int)rc, gm_st.policy.group);
        return;
    }
    char msg[512] = "";
    int g = gm_group_device(&group, (const unsigned char *)u.bytes,
                            d->physical, msg, sizeof msg);
    if (msg[0])
        gm_log(GM_LOG_WARN, "%s", msg);
    if (g < 0 || g >= GM_GROUP_MAX_DEVICES)
        return;
    gdev_dev[g] = dev;
    d->gdev1 = g + 1;
}

static void warn_broken(void)
{
    if (gm_group_broken(&group) && !atomic_exchange(&broken_warned, 1))
        gm_log(GM_LOG_WARN, "group '%s' became unusable (its segment was "
               "damaged or taken over, or its lock stopped responding); only "
               "the process limit applies now", gm_st.policy.group);
}

bool gm_grp_take_slow(struct gm_dev *d, uint64_t size)
{
    uint64_t used;
    bool ok = gm_group_reserve(&group, d->gdev1 - 1, size, &used);
    warn_broken();
    return ok;
}

void gm_grp_give_slow(struct gm_dev *d, uint64_t size)
{
    gm_group_release(&group, d->gdev1 - 1, size);
}

void gm_grp_committed_slow(struct gm_dev *d)
{
    gm_group_note_peak(&group, d->gdev1 - 1);
}

void gm_grp_settle_slow(struct gm_dev *d, uint64_t add, uint64_t sub)
{
    gm_group_charge(&group, d->gdev1 - 1, add, sub);
    warn_broken();
}

bool gm_grp_over(struct gm_dev *d)
{
    struct gm_group_usage u;
    if (d->gdev1 == 0 || gm_group_query(&group, d->gdev1 - 1, &u) != 0)
        return false;
    return u.limit != 0 && u.used > u.limit;
}

bool gm_grp_wait(struct gm_dev *d, uint64_t size, uint64_t deadline_ns)
{
    if (d->gdev1 == 0)
        return true;
    uint64_t used;
    return gm_group_wait(&group, d->gdev1 - 1, size, deadline_ns, &used);
}

bool gm_grp_view(struct gm_dev *d, uint64_t *limit, uint64_t *room)
{
    struct gm_group_peek v;
    if (d->gdev1 == 0)
        return false;
    int rc = gm_group_peek(&group, d->gdev1 - 1, &v);
    if (rc == -2) {
        /* Busy on every copy: the figures under the lock (a bounded
         * wait), not the process's own view, which may be more. */
        struct gm_group_usage u;
        if (gm_group_query(&group, d->gdev1 - 1, &u) != 0)
            return false;
        v.limit = u.limit;
        v.available = u.available;
        rc = 0;
    }
    if (rc != 0 || v.limit == 0)
        return false;
    *limit = v.limit;
    *room = v.available;
    return true;
}

void gm_grp_describe(struct gm_dev *d, char *buf, size_t cap)
{
    struct gm_group_usage u;
    if (d->gdev1 == 0 || gm_group_query(&group, d->gdev1 - 1, &u) != 0) {
        snprintf(buf, cap, "group '%s'", gm_st.policy.group);
        return;
    }
    char us[32], ls[32], rs[32], as[32];
    gm_format_size(u.used, us, sizeof us);
    gm_format_size(u.limit, ls, sizeof ls);
    int n = snprintf(buf, cap, GM_GRP_USE_FMT, gm_st.policy.group, us, ls);
    /* What the priority rule keeps from this member: without it the
     * refusal reads as if the room left were free. */
    if (u.reserved_above == 0 || u.used >= u.limit || n < 0 ||
        (size_t)n >= cap)
        return;
    gm_format_size(u.reserved_above, rs, sizeof rs);
    gm_format_size(u.available, as, sizeof as);
    snprintf(buf + n, cap - (size_t)n, GM_GRP_KEPT_FMT, rs, as);
}

size_t gm_grp_report(char *buf, size_t cap)
{
    size_t n = 0;
    if (!atomic_load(&joined) || cap == 0)
        return 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        struct gm_dev *d = &gm_st.dev[i];
        struct gm_group_usage u;
        if (d->gdev1 == 0 || gm_group_query(&group, d->gdev1 - 1, &u) != 0)
            continue;
        char us[32], ls[32], ms[32], ss[32];
        gm_format_size(u.used, us, sizeof us);
        gm_format_size(u.limit, ls, sizeof ls);
        gm_format_size(u.mine, ms, sizeof ms);
        gm_format_size(u.share, ss, sizeof ss);
        int k = snprintf(buf + n, cap - n,
                         "gpumem: device %u: group '%s': %s used of %s limit "
                         "by all members at exit; this process %s, guaranteed "
                         "share %s\n",
                         i, gm_st.policy.group, us, ls, ms, ss);
        if (k < 0 || (size_t)k >= cap - n)
            break;
        n += (size_t)k;
    }
    return n;
}

void gm_grp_leave(void)
{
    if (atomic_exchange(&joined, 0))
        gm_group_leave(&group);
}

void gm_grp_forget(void)
{
    if (atomic_exchange(&joined, 0))
        gm_group_forget(&group);
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++)
        gm_st.dev[i].gdev1 = 0;
}

/*
 * tools/cli/cmd_gc.c — `gpumem gc [--dry-run] [--prefix P]`: remove the
 * segments of processes that are gone (exited with GPUMEM_KEEP=1, or
 * killed), and the group segments (shared budgets) that have no live
 * member left (every member killed, or the last one left with
 * GPUMEM_KEEP=1), printing one line per segment removed.
 *
 * Invariants: a segment is removed only when it is a regular file owned by
 * the caller and the reader's liveness test says its writer is gone (pid
 * absent or start time different, and the writer's lock free); the test is
 * repeated on the open file right before the unlink. A segment that
 * cannot be validated (a header that is not its name's process included)
 * is removed only when it is ours, no process has the name's pid (in our
 * pid namespace), nobody holds its lock, and it is too short for a magic
 * or starts with the telemetry magic (or a magic still 0): never a file
 * of another kind, such as a group segment. Never a live writer's, never
 * another user's. A group segment is removed only by gm_group_gc, which
 * re-checks under the group's mutex that no member is alive and refuses
 * files that are not the caller's; groups a lock-free snapshot already
 * shows with a live member are not even opened for writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/telemetry/abi.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

const char gm_help_gc[] =
    "NAME\n"
    "    gpumem gc - remove the segments of processes that are gone\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem gc [--dry-run] [--prefix P]\n"
    "\n"
    "DESCRIPTION\n"
    "    A process run with GPUMEM_KEEP=1 leaves its telemetry segment\n"
    "    <prefix>.<pid> in the segment directory ($GPUMEM_SHM_DIR, default\n"
    "    /dev/shm) after exit, and a killed process cannot remove its\n"
    "    own. gpumem gc removes every such segment of the current user:\n"
    "    the process is gone when no process holds the segment's lock\n"
    "    and, for a process of this pid namespace, its pid no longer\n"
    "    exists or now belongs to a process started at another time. A\n"
    "    segment of another pid namespace (a container's,\n"
    "    <prefix>.<pid>.ns<inode>) is judged by its lock alone: its pid\n"
    "    means another process here. A file whose header names another\n"
    "    process than its name (a copy of a segment under another pid's\n"
    "    name) is not read as a segment: it is removed, as \"unreadable\",\n"
    "    when no process holds its lock and, in this pid namespace, no\n"
    "    process has the name's pid. Segments of running processes and\n"
    "    of other users are never touched. One line per segment removed:\n"
    "    its path, pid (and pid namespace) and whether it exited (kept)\n"
    "    or died.\n"
    "\n"
    "    It also removes the group segments <prefix>.group@<NAME>\n"
    "    (GPUMEM_GROUP) of the current user in which no member process is\n"
    "    alive any more: all members were killed (\"no live member, N\n"
    "    dead\"), the last member left with GPUMEM_KEEP=1 and kept the\n"
    "    file (\"no member\"; its peak, shown by gpumem ps until then, goes\n"
    "    with it), or a creator died before setting the segment up\n"
    "    (\"never set up by its creator\"). A group with a live member is\n"
    "    left alone: its members reclaim the charges of dead ones\n"
    "    themselves.\n"
    "\n"
    "OPTIONS\n"
    "    --dry-run\n"
    "        Print what would be removed; remove nothing.\n"
    "    --prefix P\n"
    "        Clean segments named P.<pid> and P.group@<NAME> (default:\n"
    "        $GPUMEM_SHM_PREFIX, else gpumem).\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Success (also when nothing was removed).\n"
    "    1   The directory could not be read or a removal failed.\n"
    "    2   Unknown option, bad prefix, or a segment directory that is\n"
    "        not safe to use (GPUMEM_SHM_DIR).\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem gc --dry-run\n"
    "        would remove /dev/shm/gpumem.41017 (pid 41017, exited)\n"
    "    gpumem gc\n"
    "        removed /dev/shm/gpumem.41017 (pid 41017, exited)\n"
    "        removed /dev/shm/gpumem.group@train (group train, no member)\n"
    "        removed /dev/shm/gpumem.group@eval (group eval, no live "
    "member, 1 dead)\n";

#define GC_MAX 65536

static int remove_one(const char *path, const struct gm_seg_id *id,
                      const char *why, bool dry)
{
    char who[64];
    if (id->pidns != 0)
        snprintf(who, sizeof who, "pid %d in pid namespace %llu", id->pid,
                 (unsigned long long)id->pidns);
    else
        snprintf(who, sizeof who, "pid %d", id->pid);
    if (dry) {
        printf("would remove %s (%s, %s)\n", path, who, why);
        return 0;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "gpumem: gc: cannot remove %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    printf("removed %s (%s, %s)\n", path, who, why);
    return 0;
}

/* Too short to hold a magic, or starting with the telemetry magic or a
 * magic still 0 (a writer that died while setting it up): the kind of
 * file gc may remove. */
static bool telemetry_kind(const char *path)
{
    uint64_t magic = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              (st.st_size < (off_t)sizeof magic ||
               (pread(fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
                (magic == GM_ABI_MAGIC || magic == 0)));
    close(fd);
    return ok;
}

/* Whether someone holds a lock on the file (a writer holds LOCK_EX for
 * its segment's life, in whatever pid namespace it runs). */
static bool lock_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

static void seg_path(char *buf, size_t cap, const char *prefix,
                     const struct gm_seg_id *id)
{
    if (id->pidns != 0)
        snprintf(buf, cap, "%s/%s.%d.ns%llu", gm_tool_shm_dir(), prefix,
                 id->pid, (unsigned long long)id->pidns);
    else
        snprintf(buf, cap, "%s/%s.%d", gm_tool_shm_dir(), prefix, id->pid);
}

/* Whether the id's pid means the same process here (its name's pid
 * namespace is ours). */
static bool id_local(const struct gm_seg_id *id)
{
    uint64_t me = gm_reader_self_pidns();
    return id->pidns == 0 ? me == 0 || me == GM_PIDNS_INIT : id->pidns == me;
}

/* A file the reader refuses: ours, a regular file of the telemetry kind,
 * nobody holding its lock, and (in our pid namespace) its pid gone. */
static int gc_unreadable(const char *prefix, const struct gm_seg_id *id,
                         bool dry)
{
    char path[512];
    struct stat st;
    seg_path(path, sizeof path, prefix, id);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != getuid())
        return 0;
    if (id_local(id) && (kill(id->pid, 0) == 0 || errno != ESRCH))
        return 0;
    if (lock_held(path))
        return 0;
    if (!telemetry_kind(path)) {
        fprintf(stderr, "gpumem: gc: %s is not a gpumem telemetry segment; "
                "left alone\n", path);
        return 0;
    }
    return remove_one(path, id, "unreadable", dry);
}

static int gc_one(const char *prefix, const struct gm_seg_id *id, bool dry)
{
    struct gm_seg s;
    char err[256];
    if (gm_seg_open_id(&s, gm_tool_shm_dir(), prefix, id, err,
                       sizeof err) != 0)
        return gc_unreadable(prefix, id, dry);
    int rc = 0;
    enum gm_seg_state st = gm_seg_state(&s);
    if (s.uid == getuid() && st != GM_SEG_ALIVE) {
        /* Re-check on the open file: a new process with this pid may have
         * replaced it meanwhile. */
        struct stat a, b;
        if (fstat(s.fd, &a) == 0 && lstat(s.path, &b) == 0 &&
            a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
            gm_seg_state(&s) != GM_SEG_ALIVE)
            rc = remove_one(s.path, id, st == GM_SEG_EXITED ? "exited"
                                                            : "died", dry);
    }
    gm_seg_close(&s);
    return rc;
}

/* ---- groups ------------------------------------------------------------ */

struct ggc {
    bool dry;
    int rc;
};

static int gc_group(void *arg, const char *path, const char *name)
{
    struct ggc *c = arg;
    struct stat st;
    char err[512];
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != getuid())
        return 0;
    struct gm_group_view *v = malloc(sizeof *v);
    if (v == NULL) {
        fprintf(stderr, "gpumem: gc: out of memory\n");
        c->rc = 1;
        return 1;
    }
    bool readable = gm_group_snapshot(path, v, err, sizeof err) == 0;
    unsigned live = readable ? gm_group_live_members(v) : 0;
    unsigned dead = readable ? gm_group_dead_members(v) : 0;
    free(v);
    if (live > 0)
        return 0;
    /* The snapshot says "(being created?)" for a file that is empty or
     * not initialised; anything else it refuses is not ours to judge. */
    if (!readable && strstr(err, "being created?") == NULL) {
        fprintf(stderr, "gpumem: gc: %s; left alone\n", err);
        return 0;
    }
    char why[64];
    if (!readable)
        snprintf(why, sizeof why, "never set up by its creator");
    else if (dead > 0)
        snprintf(why, sizeof why, "no live member, %u dead", dead);
    else
        snprintf(why, sizeof why, "no member");
    if (c->dry) {
        printf("would remove %s (group %s, %s)\n", path, name, why);
        return 0;
    }
    int r = gm_group_gc(path, err, sizeof err);
    if (r == 1) {
        printf("removed %s (group %s, %s)\n", path, name, why);
    } else if (r < 0) {
        /* A creator still setting it up is not a failure. */
        fprintf(stderr, "gpumem: gc: %s\n", err);
        c->rc |= readable ? 1 : 0;
    }
    return 0;
}

int gm_cmd_gc(int argc, char **argv)
{
    static struct gm_seg_id ids[GC_MAX];
    bool dry = false;
    const char *popt = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = gm_opt_flag("gc", argv[i], "--dry-run")) != 0 ||
            (r = gm_opt_flag("gc", argv[i], "-n")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            dry = true;
        } else if ((r = gm_opt_value("gc", argc, argv, &i, "--prefix",
                                     &popt)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
        } else {
            fprintf(stderr, "gpumem: gc: unknown %s '%s'; usage: gpumem gc "
                    "[--dry-run] [--prefix P]\n",
                    argv[i][0] == '-' ? "option" : "argument", argv[i]);
            return GM_EXIT_USAGE;
        }
    }
    const char *prefix = gm_tool_prefix("gc", popt);
    if (prefix == NULL)
        return GM_EXIT_USAGE;
    int n = gm_reader_list_ids(gm_tool_shm_dir(), prefix, ids, GC_MAX);
    if (n < 0) {
        fprintf(stderr, "gpumem: gc: cannot read %s: %s\n", gm_tool_shm_dir(),
                strerror(errno));
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n && i < GC_MAX; i++)
        rc |= gc_one(prefix, &ids[i], dry);
    struct ggc c = { dry, 0 };
    if (gm_group_list(gm_tool_shm_dir(), prefix, gc_group, &c) < 0) {
        fprintf(stderr, "gpumem: gc: cannot read %s: %s\n",
                gm_tool_shm_dir(), strerror(errno));
        return 1;
    }
    return rc | c.rc;
}

/*
 * shim/telemetry/jobuse.c — the job's charge on a device, from the
 * segments of its live processes (jobuse.h): a directory scan, a pread of
 * each header and device block, a retry while a writer is inside a block.
 */
#include "shim/telemetry/jobuse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/base/safefile.h"
#include "shim/telemetry/abi.h"
#include "shim/telemetry/ident.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool gm_uuid_parse(const char *text, unsigned char out[16])
{
    if (text == NULL)
        return false;
    if (strncmp(text, "GPU-", 4) == 0)
        text += 4;
    unsigned n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '-')
            continue;
        int h = hexval(*p), l = p[1] != '\0' ? hexval(p[1]) : -1;
        if (h < 0 || l < 0 || n == 16)
            return false;
        out[n++] = (unsigned char)(h << 4 | l);
        p++;
    }
    return n == 16;
}

/* "<prefix>.<digits>" or "<prefix>.<digits>.ns<digits>": the pid, and
 * the writer's pid namespace (0 for the initial one); 0 for other names. */
static int name_pid(const char *name, const char *prefix,
                    unsigned long long *ns)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0 || name[pl] != '.')
        return 0;
    const char *p = name + pl + 1;
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (end == p || errno != 0 || pid <= 0 || pid > 0x3fffffff)
        return 0;
    *ns = 0;
    if (*end == '\0')
        return (int)pid;
    if (strncmp(end, ".ns", 3) != 0 || end[3] < '0' || end[3] > '9')
        return 0;
    errno = 0;
    *ns = strtoull(end + 3, &end, 10);
    if (*end != '\0' || errno != 0 || *ns == 0)
        return 0;
    return (int)pid;
}

/* The inode of the caller's pid namespace (0: unknown). */
static unsigned long long own_pidns(void)
{
    char link[64];
    ssize_t k = readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (k <= 0)
        return 0;
    link[k] = '\0';
    return gm_ident_parse_nslink(link);
}

/* A writer holds its segment's lock (LOCK_EX, from before its magic is
 * stored until it closes; an exec drops it with the descriptor): a
 * shared lock that can be had means nobody writes there any more. */
static bool writer_holds(int fd)
{
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        return false;
    }
    return errno == EWOULDBLOCK;
}

static bool header_ok(const struct gm_abi_header *h, const struct stat *st)
{
    return h->magic == GM_ABI_MAGIC && h->abi_version == GM_ABI_VERSION &&
           h->header_size == sizeof *h &&
           h->dev_size == sizeof(struct gm_abi_dev) && h->dev_slots >= 1 &&
           h->dev_slots <= GM_ABI_MAX_DEVICES && h->dev_offset == sizeof *h &&
           (uint64_t)st->st_size >= h->dev_offset +
                                        (uint64_t)h->dev_slots * h->dev_size &&
           h->closed_ns == 0;
}

/* One device block as a writer left it (its last copy when one stays
 * inside); false when the file cannot be read. */
static bool read_dev(int fd, uint64_t at, struct gm_abi_dev *d)
{
    for (unsigned i = 0; i < GM_JOBUSE_TRIES; i++) {
        if (!gm_pread_all(fd, d, sizeof *d, at))
            return false;
        if (d->wbegin == d->wdone)
            return true;
        usleep(100);
    }
    return true;
}

/* The segment's charge on the device with `uuid`; false when it is not
 * one of the job's. `local`: its writer is in the caller's pid namespace
 * (its pid and start time can be checked). */
static bool segment_used(int dirfd, const char *name, int pid, bool local,
                         unsigned long long pidns, uid_t uid,
                         const char *job_id, const unsigned char uuid[16],
                         uint64_t *used)
{
    *used = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    struct gm_abi_header h;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
              (size_t)st.st_size >= sizeof h && gm_pread_all(fd, &h, sizeof h, 0) &&
              header_ok(&h, &st) && h.ident.uid == (uint32_t)uid &&
              writer_holds(fd) &&
              (!local || ((int)h.pid == pid && gm_proc_alive(pid, h.start_ticks)));
    if (ok && job_id != NULL && job_id[0] != '\0')
        ok = strncmp(h.ident.job_id, job_id, sizeof h.ident.job_id) == 0;
    /* One job, one pid namespace (a container's processes, not the
     * host's that share its directory); unknown on either side: kept. */
    if (ok && pidns != 0 && h.ident.pidns != 0)
        ok = h.ident.pidns == pidns;
    uint32_t n = h.dev_seen < h.dev_slots ? (uint32_t)h.dev_seen : h.dev_slots;
    for (uint32_t i = 0; ok && i < n; i++) {
        struct gm_abi_dev d;
        if (!read_dev(fd, h.dev_offset + (uint64_t)i * h.dev_size, &d))
            break;
        if (d.present && memcmp(d.uuid, uuid, 16) == 0)
            *used = d.used > UINT64_MAX - *used ? UINT64_MAX : *used + d.used;
    }
    close(fd);
    return ok;
}

/* A name worth opening: a regular file of the caller's (another user's
 * files never count toward GM_JOBUSE_MAX). */
static bool own_file(int dirfd, const char *name, uid_t uid)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(st.st_mode) && st.st_uid == uid;
}

uint64_t gm_job_used(const char *dir, const char *prefix, uid_t uid,
                     const char *job_id, const unsigned char uuid[16],
                     unsigned *procs)
{
    uint64_t sum = 0;
    unsigned n = 0, seen = 0;
    DIR *dp = opendir(dir);
    if (dp != NULL) {
        struct dirent *e;
        unsigned long long mine = own_pidns();
        unsigned long long named = mine == GM_PIDNS_INIT ? 0 : mine;
        while ((e = readdir(dp)) != NULL && seen < GM_JOBUSE_MAX) {
            unsigned long long ns;
            int pid = name_pid(e->d_name, prefix, &ns);
            if (pid == 0 || !own_file(dirfd(dp), e->d_name, uid))
                continue;
            seen++;
            uint64_t u;
            if (segment_used(dirfd(dp), e->d_name, pid, ns == named, mine,
                             uid, job_id, uuid, &u) && u != 0) {
                sum = u > UINT64_MAX - sum ? UINT64_MAX : sum + u;
                n++;
            }
        }
        closedir(dp);
    }
    if (procs != NULL)
        *procs = n;
    return sum;
}

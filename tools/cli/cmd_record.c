/*
 * tools/cli/cmd_record.c — `gpumem record -o FILE [run options] -- CMD
 * ARGS...`: run CMD under the shim with GPUMEM_RECORD pointing at a
 * private directory, so that every process it starts writes its own
 * section (shim/record/record.c); when CMD has exited and the recorded
 * processes it left running have closed their sections, join the
 * sections, oldest process first, into FILE (docs/trace.md).
 *
 * Invariants: FILE is replaced whole (written beside it, then renamed),
 * never through a link, once CMD ran (with no section when no process
 * made a recorded call, which is said); when CMD could not be executed
 * nothing ran, FILE is left as it was (or not made) and the status is
 * 126 or 127; a section is waited for while its writer, the same
 * process (pid and start time), runs, until --wait-timeout or SIGINT,
 * SIGTERM, SIGHUP, each said; a section its writer did not close
 * (crash, exec, kill, or still running when the wait ended) is cut at
 * its last record, marked COUNTED and said as what it is; the private
 * directory is removed on every path; the exit status is CMD's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/record/recfmt.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/trace.h"
#include "tools/lib/util.h"

const char gm_help_record[] =
    "NAME\n"
    "    gpumem record - record every driver call of a program to a file\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem record -o FILE [--wait-timeout DURATION] [RUN OPTIONS]\n"
    "                  -- CMD [ARGS...]\n"
    "\n"
    "DESCRIPTION\n"
    "    Runs CMD under libgpumem.so, as gpumem run does, and writes every\n"
    "    memory call of every CUDA process it starts (allocations and\n"
    "    frees of each API, stream-ordered ones with their stream and pool,\n"
    "    VMM create/release/retain, managed memory, arrays, contexts, pool\n"
    "    trims and synchronisations) with its time, size, device, thread\n"
    "    and result (a refusal is a call whose result is an error) to\n"
    "    FILE. Each process writes its own section straight into a file\n"
    "    mapping as it runs, so threads, forked children and crashed\n"
    "    processes are recorded whole; records that could not be stored\n"
    "    (a full disk) are counted, and the file says how many and where.\n"
    "    FILE is written when CMD has exited and the recorded processes it\n"
    "    left running (a job started in the background, a daemon) have\n"
    "    ended: record says once which pids it waits for. --wait-timeout,\n"
    "    Ctrl-C (SIGINT), SIGTERM or SIGHUP ends that wait early: what\n"
    "    they recorded up to then is kept, they go on running, and each\n"
    "    is named as still running. A process that had made no recorded\n"
    "    call when CMD exited is not waited for. FILE is written when no\n"
    "    process made a memory call too (it then holds none, and the line\n"
    "    says so); when CMD cannot be executed nothing is recorded and\n"
    "    FILE is left as it was.\n"
    "    The format is docs/trace.md; gpumem log --from FILE prints it,\n"
    "    gpumem replay FILE replays it under another policy.\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output FILE\n"
    "        The recording to write (replaced when it exists).\n"
    "    --wait-timeout DURATION\n"
    "        How long to wait, once CMD has exited, for recorded processes\n"
    "        still running (30s, 5m, 1h; 0: not at all). Default: until\n"
    "        they end.\n"
    "    RUN OPTIONS\n"
    "        --limit, --mode, --on-oom, ... as for gpumem run: the policy\n"
    "        the program is recorded under.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    The exit status of CMD (128+N when a signal N ended it), also\n"
    "    when the wait for processes it left running was ended early.\n"
    "    1    The recording could not be written.\n"
    "    2    Usage error, or the policy is invalid.\n"
    "    126  CMD could not be executed; 127 CMD was not found (FILE is\n"
    "         left as it was).\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem record -o train.gmr -- python train.py\n"
    "    gpumem record -o t.gmr --limit 2G -- gpumem-trainsim --steps 20\n"
    "    gpumem log --from t.gmr | head\n";

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "gpumem: record: %s%s%s; usage: gpumem record -o FILE "
            "[RUN OPTIONS] -- CMD [ARGS...] (gpumem record --help)\n", msg,
            arg ? " " : "", arg ? arg : "");
    return GM_EXIT_USAGE;
}

struct section {
    char name[NAME_MAX + 1];
    struct gm_rec_header h;
    bool keep; /* not this format's: left in the directory, named */
};

static int by_start(const void *a, const void *b)
{
    const struct section *x = a, *y = b;
    if (x->h.start_ns != y->h.start_ns)
        return x->h.start_ns < y->h.start_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A section this gpumem cannot read: another format's (a program run by
 * CMD with another gpumem inherits GPUMEM_RECORD), or not a recording at
 * all. Copied into FILE it would make the whole file unreadable. */
#define SECTION_FOREIGN -2

static bool foreign_header(const struct gm_rec_header *h)
{
    return h->magic != GM_REC_MAGIC || h->version != GM_REC_VERSION ||
           h->header_size != sizeof *h || h->record_size != GM_REC_SIZE;
}

/* Whether the name is one a writer gives its section: "<pid>.<k>.gmr". */
static bool section_name(const char *n)
{
    const char *p = n;
    for (int part = 0; part < 2; part++) {
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p++ != '.')
            return false;
    }
    return strcmp(p, "gmr") == 0;
}

/* Copy one section to `out`; returns records copied, -1 (unreadable) or
 * SECTION_FOREIGN. */
static long long copy_section(int dfd, struct section *s, FILE *out,
                              uint64_t *lost)
{
    if (!section_name(s->name))
        return SECTION_FOREIGN;
    int fd = openat(dfd, s->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    FILE *in = fdopen(fd, "rb");
    if (in == NULL) {
        close(fd);
        return -1;
    }
    struct gm_rec_header h;
    size_t got = fread(&h, 1, sizeof h, in);
    if (got != sizeof h || h.magic == 0) {
        fclose(in);
        return 0; /* no header yet: a writer that died at once */
    }
    if (foreign_header(&h)) {
        fclose(in);
        return SECTION_FOREIGN;
    }
    bool closed = (h.flags & GM_REC_F_CLOSED) != 0;
    long pos = ftell(in);
    uint64_t n = 0;
    struct gm_rec r;
    /* Count first: the header goes before the records. */
    while ((closed ? n < h.count : 1) && fread(&r, 1, sizeof r, in) == sizeof r &&
           r.op != GM_RO_NONE)
        n++;
    if (!closed) {
        h.count = n;
        h.flags |= GM_REC_F_COUNTED;
    } else if (n != h.count) {
        h.count = n; /* a closed file cut short: keep what is there */
        h.flags = (h.flags & ~GM_REC_F_CLOSED) | GM_REC_F_COUNTED;
    }
    fseek(in, pos, SEEK_SET);
    fwrite(&h, 1, sizeof h, out);
    for (uint64_t i = 0; i < n && fread(&r, 1, sizeof r, in) == sizeof r; i++)
        fwrite(&r, 1, sizeof r, out);
    fclose(in);
    *lost += h.lost;
    s->h = h;
    return (long long)n;
}

/* Every *.gmr file of the directory with its header, oldest first, in
 * a malloc'd array (*out, NULL when there is none). A file whose header
 * is not written yet (its writer is at its first record) gets the pid of
 * its name ("<pid>.<k>.gmr") and its change time as its start, magic 0. */
static size_t read_sections(DIR *d, struct section **out)
{
    struct section *secs = NULL;
    size_t ns = 0;
    struct dirent *e;
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".gmr") != 0)
            continue;
        struct section *p = realloc(secs, (ns + 1) * sizeof *p);
        if (p == NULL)
            break;
        secs = p;
        memset(&secs[ns], 0, sizeof secs[ns]);
        snprintf(secs[ns].name, sizeof secs[ns].name, "%s", e->d_name);
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW |
                        O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && read(fd, &secs[ns].h, sizeof secs[ns].h) !=
                           (ssize_t)sizeof secs[ns].h) {
            memset(&secs[ns].h, 0, sizeof secs[ns].h);
            secs[ns].h.pid = (uint32_t)strtoul(e->d_name, NULL, 10);
            if (fstat(fd, &st) == 0)
                secs[ns].h.start_ns = (uint64_t)st.st_ctim.tv_sec *
                                      1000000000ull +
                                      (uint64_t)st.st_ctim.tv_nsec;
        }
        if (fd >= 0)
            close(fd);
        ns++;
    }
    if (ns > 1)
        qsort(secs, ns, sizeof *secs, by_start);
    *out = secs;
    return ns;
}

/* Whether a later section of the same pid follows section i: the
 * process exec'd another image, which writes that one. */
static bool superseded(const struct section *s, size_t n, size_t i)
{
    for (size_t j = 0; j < n; j++)
        if (j != i && s[j].h.pid == s[i].h.pid &&
            s[j].h.start_ns > s[i].h.start_ns)
            return true;
    return false;
}

/* Whether section i is still being written: not closed, not left by an
 * exec, and its writer is the process still running under its pid. */
static bool still_written(const struct section *s, size_t n, size_t i)
{
    return !(s[i].h.flags & GM_REC_F_CLOSED) && !superseded(s, n, i) &&
           gm_rec_writer_running(s[i].h.pid, s[i].h.start_ns);
}

/* What became of a section its writer did not close, on stderr. */
static void say_unclosed(const struct section *s, size_t n, size_t i,
                         long long k, const char *file)
{
    uint32_t pid = s[i].h.pid;
    if (superseded(s, n, i))
        fprintf(stderr, "gpumem: record: pid %u exec'd another program "
                "without closing its section; its %lld records are kept\n",
                pid, k);
    else if (gm_rec_writer_running(pid, s[i].h.start_ns))
        fprintf(stderr, "gpumem: record: pid %u is still running: %s holds "
                "its %lld records so far, not what it records from now "
                "on\n", pid, file, k);
    else
        fprintf(stderr, "gpumem: record: pid %u did not close its section "
                "(it crashed, was killed or exec'd); its %lld records are "
                "kept\n", pid, k);
}

static int join(const char *dir, const char *file)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "gpumem: record: cannot read %s: %s\n", dir,
                strerror(errno));
        return 1;
    }
    struct section *secs;
    size_t ns = read_sections(d, &secs);
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.part%ld", file, (long)getpid());
    int ofd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0600);
    FILE *out = ofd >= 0 ? fdopen(ofd, "wb") : NULL;
    int rc = 0;
    uint64_t total = 0, lost = 0;
    size_t procs = 0, unwritten = 0, kept = 0;
    if (out == NULL) {
        fprintf(stderr, "gpumem: record: cannot write %s: %s\n", tmp,
                strerror(errno));
        rc = 1;
    } else {
        for (size_t i = 0; i < ns; i++) {
            long long k = copy_section(dirfd(d), &secs[i], out, &lost);
            if (k == SECTION_FOREIGN) {
                const struct gm_rec_header *h = &secs[i].h;
                secs[i].keep = true;
                kept++;
                if (h->magic == GM_REC_MAGIC && section_name(secs[i].name))
                    fprintf(stderr, "gpumem: record: %s/%s (pid %u) is a "
                            "section of another recording format (version "
                            "%u, %u-byte header, %u-byte records; this "
                            "gpumem reads version %u, %zu and %u): left out "
                            "of %s and kept where it is\n", dir,
                            secs[i].name, h->pid, h->version,
                            h->header_size, h->record_size, GM_REC_VERSION,
                            sizeof *h, GM_REC_SIZE, file);
                else
                    fprintf(stderr, "gpumem: record: %s/%s is not a "
                            "recording section (not named <pid>.<n>.gmr, or "
                            "no gpumem recording header): left out of %s "
                            "and kept where it is\n", dir, secs[i].name,
                            file);
                continue;
            }
            if (k < 0)
                continue;
            if (secs[i].h.magic == GM_REC_MAGIC) {
                procs++;
                total += (uint64_t)k;
                if (secs[i].h.flags & GM_REC_F_COUNTED)
                    say_unclosed(secs, ns, i, k, file);
            } else if (secs[i].h.magic == 0) {
                unwritten++;
                fprintf(stderr, "gpumem: record: pid %u made a CUDA memory "
                        "call but could not write its recording (no space "
                        "or a file size limit beside %s, as its stderr "
                        "says, or it was killed at once): its records are "
                        "LOST\n", secs[i].h.pid, file);
            }
        }
        if (fflush(out) != 0 || fsync(fileno(out)) != 0 || ferror(out)) {
            fprintf(stderr, "gpumem: record: cannot write %s: %s\n", tmp,
                    strerror(errno));
            rc = 1;
        }
        fclose(out);
        if (rc == 0 && rename(tmp, file) != 0) {
            fprintf(stderr, "gpumem: record: cannot rename %s to %s: %s\n",
                    tmp, file, strerror(errno));
            rc = 1;
        }
        if (rc != 0)
            unlink(tmp);
    }
    for (size_t i = 0; i < ns; i++)
        if (!secs[i].keep)
            unlinkat(dirfd(d), secs[i].name, 0);
    closedir(d);
    free(secs);
    if (rc == 0) {
        fprintf(stderr, "gpumem: record: %zu process%s, %llu records", procs,
                procs == 1 ? "" : "es", (unsigned long long)total);
        if (lost)
            fprintf(stderr, ", %llu LOST (see gpumem log --from)",
                    (unsigned long long)lost);
        if (unwritten)
            fprintf(stderr, ", %zu process%s LOST whole", unwritten,
                    unwritten == 1 ? "" : "es");
        if (kept)
            fprintf(stderr, ", %zu section%s of another format left out",
                    kept, kept == 1 ? "" : "s");
        fprintf(stderr, " -> %s%s\n", file,
                total == 0 && lost == 0 && unwritten == 0 && kept == 0
                ? " (no process of the command made a CUDA memory call "
                  "under the shim)" : "");
    }
    return rc;
}

static volatile sig_atomic_t child_pid, got_sig;

/* The pids of the sections still being written (one entry a pid), at
 * most cap; how many. */
static size_t writers(const char *dir, pid_t *pids, size_t cap)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct section *secs;
    size_t ns = read_sections(d, &secs), n = 0;
    for (size_t i = 0; i < ns && n < cap; i++) {
        if (!still_written(secs, ns, i))
            continue;
        size_t j = 0;
        while (j < n && pids[j] != (pid_t)secs[i].h.pid)
            j++;
        if (j == n)
            pids[n++] = (pid_t)secs[i].h.pid;
    }
    free(secs);
    closedir(d);
    return n;
}

/* "pid 4467" or "pids 4467, 4470" on stderr. */
static void say_pids(const pid_t *pids, size_t n)
{
    fprintf(stderr, "pid%s", n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s %ld", i ? "," : "", (long)pids[i]);
}

static const char *sig_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP ? "SIGHUP" : "a signal";
}

#define WAIT_MAX_PIDS 64
#define WAIT_POLL_NS 20000000L /* how often the sections are looked at */

static uint64_t since_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000000ull +
           (uint64_t)t.tv_nsec - (uint64_t)t0->tv_nsec;
}

/* Say the pids of now[0..n) not in said[0..*nsaid) yet, and add them:
 * the first time with what ends the wait, later as newcomers. */
static void say_waiting(const pid_t *now, size_t n, pid_t *said,
                        size_t *nsaid, const char *cmd, const char *limit)
{
    pid_t fresh[WAIT_MAX_PIDS];
    size_t nf = 0, before = *nsaid;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < *nsaid && said[j] != now[i])
            j++;
        if (j == *nsaid && *nsaid < WAIT_MAX_PIDS)
            fresh[nf++] = said[(*nsaid)++] = now[i];
    }
    if (nf == 0)
        return;
    if (before > 0) {
        fprintf(stderr, "gpumem: record: waiting for ");
        say_pids(fresh, nf);
        fprintf(stderr, " too, started by a recorded process\n");
        return;
    }
    const char *base = strrchr(cmd, '/');
    fprintf(stderr, "gpumem: record: %s exited; waiting for ",
            base != NULL && base[1] != '\0' ? base + 1 : cmd);
    say_pids(fresh, nf);
    fprintf(stderr, ", still recording (Ctrl-C or SIGTERM stops waiting and "
            "keeps what is recorded so far");
    if (limit != NULL)
        fprintf(stderr, "; at most %s, --wait-timeout", limit);
    fprintf(stderr, ")\n");
}

/* After CMD exited: wait for the processes still writing their sections
 * (still_written) to close them, looking every WAIT_POLL_NS, until none
 * is left, SIGINT, SIGTERM or SIGHUP comes (got_sig: one that came while
 * CMD ran, passed to it, means no wait) or `timeout` ns pass
 * (--wait-timeout `limit`; NULL: none, until they end; 0 never waits).
 * Which pids it waits for is said once each, and why it stopped early. */
static void await_writers(const char *dir, const char *cmd, uint64_t timeout,
                          const char *limit)
{
    pid_t said[WAIT_MAX_PIDS], now[WAIT_MAX_PIDS];
    size_t nsaid = 0, n;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (timeout > 0 && (n = writers(dir, now, WAIT_MAX_PIDS)) > 0) {
        if (got_sig || (limit != NULL && since_ns(&t0) >= timeout)) {
            if (got_sig && nsaid == 0)
                fprintf(stderr, "gpumem: record: %s: not waiting for ",
                        sig_name(got_sig));
            else if (got_sig)
                fprintf(stderr, "gpumem: record: stopped waiting (%s) for ",
                        sig_name(got_sig));
            else
                fprintf(stderr, "gpumem: record: stopped waiting after %s "
                        "(--wait-timeout) for ", limit);
            say_pids(now, n);
            fprintf(stderr, ", still recording\n");
            return;
        }
        say_waiting(now, n, said, &nsaid, cmd, limit);
        struct timespec poll = { 0, WAIT_POLL_NS };
        nanosleep(&poll, NULL);
    }
}

/* Fork and execute cmd. Returns the child; 0 when cmd could not be
 * executed (the child reaped, the errno of execvp in *exec_err: nothing
 * ran); -1 when there is no child (message printed). The child says an
 * exec failure through a pipe closed on a successful exec. */
static pid_t spawn(char **cmd, int *exec_err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "gpumem: record: pipe: %s\n", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpumem: record: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        execvp(cmd[0], cmd);
        int e = errno;
        fprintf(stderr, "gpumem: record: cannot execute '%s': %s\n", cmd[0],
                strerror(e));
        ssize_t w = write(fds[1], &e, sizeof e);
        (void)w;
        _exit(e == ENOENT ? 127 : 126);
    }
    close(fds[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(fds[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    if (n != (ssize_t)sizeof e)
        return pid;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    *exec_err = e;
    return 0;
}

/* --wait-timeout's value: a duration, 0 (or 0s, ...: do not wait). 0,
 * or -1. */
static int wait_timeout(const char *v, uint64_t *ns)
{
    uint64_t t = 0;
    enum gm_perr e = gm_parse_duration_ex(v, &t, NULL);
    if (e != GM_PERR_OK && e != GM_PERR_ZERO && strcmp(v, "0") != 0)
        return -1;
    *ns = e == GM_PERR_OK ? t : 0;
    return 0;
}

/* CMD never ran: say what became of FILE; the status of a failed exec. */
static int not_executed(const char *file, int e)
{
    fprintf(stderr, "gpumem: record: nothing was recorded; %s %s\n", file,
            access(file, F_OK) == 0 ? "is left as it was" : "was not written");
    return e == ENOENT ? 127 : 126;
}

/* SIGTERM / SIGHUP while CMD runs: passed to CMD, whose end we wait for
 * to join. After it (and SIGINT then, unless it came ignored): the wait
 * for the processes still recording ends. */
static void on_signal(int sig)
{
    got_sig = sig;
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

int gm_cmd_record(int argc, char **argv)
{
    const char *file = NULL, *limit = NULL;
    uint64_t timeout = UINT64_MAX;
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        const char *v = NULL;
        int r = gm_opt_value("record", argc, argv, &i, "--output", &v);
        if (r == 0)
            r = gm_opt_value("record", argc, argv, &i, "-o", &v);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r > 0) {
            file = v;
            continue;
        }
        r = gm_opt_value("record", argc, argv, &i, "--wait-timeout", &v);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r > 0) {
            if (wait_timeout(v, &timeout) != 0)
                return usage("--wait-timeout takes a duration (30s, 5m, "
                             "1h, 500ms) or 0 (do not wait), not", v);
            limit = v;
            continue;
        }
        r = gm_run_apply_opt("record", argc, argv, &i);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r == 0) {
            if (argv[i][0] == '-')
                return usage("unknown option", argv[i]);
            break;
        }
    }
    if (file == NULL)
        return usage("no output file (-o FILE)", NULL);
    if (i >= argc)
        return usage("no command given", NULL);
    /* The private directory beside FILE: same file system, same disk. */
    char dir[PATH_MAX], fcopy[PATH_MAX];
    snprintf(fcopy, sizeof fcopy, "%s", file);
    snprintf(dir, sizeof dir, "%s/.gpumem-record.XXXXXX", dirname(fcopy));
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "gpumem: record: cannot make a directory beside %s: "
                "%s\n", file, strerror(errno));
        return 1;
    }
    char adir[PATH_MAX];
    if (realpath(dir, adir) == NULL)
        snprintf(adir, sizeof adir, "%s", dir);
    setenv("GPUMEM_RECORD", adir, 1);
    int rc = gm_run_setup("record");
    if (rc != 0) {
        rmdir(dir);
        return rc;
    }
    int exec_err = 0;
    pid_t pid = spawn(&argv[i], &exec_err);
    if (pid <= 0) {
        rmdir(dir);
        return pid < 0 ? 1 : not_executed(file, exec_err);
    }
    /* The terminal's signals reach the child too; we outlive it to join. */
    child_pid = pid;
    struct sigaction sa, old_int;
    sigaction(SIGINT, NULL, &old_int);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    /* Ctrl-C now ends the wait, unless SIGINT came ignored (a job run
     * in the background by a shell without job control). */
    if (old_int.sa_handler != SIG_IGN)
        sigaction(SIGINT, &sa, NULL);
    await_writers(dir, argv[i], timeout, limit);
    int jr = join(dir, file);
    if (rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "gpumem: record: %s is left in place: it holds "
                "files that are not this run's recording (sections named "
                "above, or files the command wrote there); remove it when "
                "done with them\n", dir);
    return jr != 0 ? 1 : status;
}

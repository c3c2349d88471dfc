/*
 * tools/cli/cmd_replay.c — `gpumem replay FILE [RUN OPTIONS] [--sweep
 * LO:HI] [--json]`: replay a recording (or a text trace) through
 * libgpumem.so over the simulated driver, under the policy the run
 * options give, one process at a time (gpumem-replay, tools/replay), and
 * print what the shim did: peak, refusals, spills, waits, fragmentation
 * at the peak, live at the end; a replay that could not run says why
 * (a device below the simulated context's size names that size).
 *
 * Invariants: every replay runs in a fresh process with the same driver
 * and device size, so replays of one file differ only by their policy;
 * the limit a sweep reports as the smallest with no refusal was replayed
 * and had none, nor (under on_oom spill, warn, wait) a spill, a call let
 * past the limit or a wait, and (to the search's resolution) the one
 * below it had one.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "shim/base/safefile.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/trace.h"
#include "tools/lib/util.h"

extern char **environ;

/* The simulated driver's devices at most (GM_SIM_MAX_PHYS of
 * tools/sim/simmachine.h, which this layer does not include). */
#define SIM_DEVICES 16

const char gm_help_replay[] =
    "NAME\n"
    "    gpumem replay - replay a recording under another policy\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem replay FILE [RUN OPTIONS] [--pid N] [--device-size SIZE]\n"
    "                  [--pace] [--together] [--sweep LO:HI [--points N]]\n"
    "                  [--json]\n"
    "\n"
    "DESCRIPTION\n"
    "    Issues the driver calls recorded in FILE (gpumem record, or the\n"
    "    plain text format 'pid t_ns op size ptr rc dt_ns' of other\n"
    "    tools) again, in their order, through libgpumem.so over the\n"
    "    simulated driver: the code the program would run, under the\n"
    "    policy given by the RUN OPTIONS (--limit, --mode, --static-size,\n"
    "    --on-oom, --warmup, --group, ... as for gpumem run; the GPUMEM_*\n"
    "    variables of the environment apply too). It prints the peak\n"
    "    (context included), the refusals (how many; the first one's\n"
    "    step, that is its call number in the process, its time and\n"
    "    size), spills, waits and the time spent in them, the calls let\n"
    "    past the limit (on_oom=warn, when any), fragmentation at the peak\n"
    "    and what was live at the end. FILE - is the standard input (a\n"
    "    pipe or a redirected file; a terminal is refused), copied once\n"
    "    into a private temporary file in $TMPDIR (else /tmp), removed at\n"
    "    once, that every replay reads.\n"
    "\n"
    "    Each call is replayed on the device it was recorded on, the\n"
    "    simulated driver having as many as the recording uses; the limit\n"
    "    holds per device, as in the run. The peak printed is the\n"
    "    largest device's, the counts are summed, and with several\n"
    "    devices a line for each follows.\n"
    "\n"
    "    Calls the original driver failed for reasons other than memory\n"
    "    are skipped; a refused call is replayed (another policy may serve\n"
    "    it), and frees of what the replay could not allocate are skipped\n"
    "    and counted. A retained VMM handle is released at its last\n"
    "    release, as the driver frees it; arrays are counted, not\n"
    "    replayed. A replay runs as fast as the calls go unless --pace is\n"
    "    given; a process replayed alone cannot be helped by another's\n"
    "    frees, so with --on-oom wait its waits end by their timeout.\n"
    "\n"
    "    With --sweep LO:HI the file is replayed at --points limits from\n"
    "    LO to HI (default 9) and a table is printed, then the smallest\n"
    "    limit (per device) with no refusal. In grow mode it is the\n"
    "    unlimited peak of the device that needs most\n"
    "    (context included), checked by replaying at it, unless the\n"
    "    process made stream-ordered allocations: a refusal first trims\n"
    "    their pools, so a lower limit may serve every call, and the limit\n"
    "    is searched by bisection to 1 MiB from the context plus the\n"
    "    largest request up to the peak (2 + log2 of that span in MiB\n"
    "    replays). In other modes it depends on fragmentation and is\n"
    "    searched by bisection to 1 MiB between LO and HI. Under\n"
    "    --on-oom spill, warn or wait, a call the policy spilled, let past\n"
    "    the limit or waited for is no refusal but not served within the\n"
    "    limit either: the table has a column of their count and the\n"
    "    answer is the smallest limit with no refusal and none of them\n"
    "    (the line says which: 'no refusal and no spill').\n"
    "\n"
    "OPTIONS\n"
    "    --pid N\n"
    "        Replay only process N of the file (default: each in turn).\n"
    "    --device-size SIZE\n"
    "        Each simulated device's memory (default 80G, or twice the most\n"
    "        a process of the recording held at once on one device plus\n"
    "        1G, when that is more); NN% limits are of this size. It must\n"
    "        hold the simulated context (SIMCUDA_CONTEXT, 300M by\n"
    "        default); below that nothing is replayed, and that is said.\n"
    "    --pace\n"
    "        Issue each call at its recorded time, counted from the\n"
    "        process's first call, instead of back to back. A stretch of\n"
    "        more than 60 s without a call is shortened to 60 s.\n"
    "    --together\n"
    "        Replay every process of the file at once, each at its recorded\n"
    "        times (--pace) counted from the file's first call, so that\n"
    "        they meet as they did: with --group and --group-limit they\n"
    "        share one budget. A stretch of more than 60 s in which no\n"
    "        process makes a call is shortened to 60 s.\n"
    "    --sweep LO:HI, --points N\n"
    "        Replay at N limits from LO to HI (sizes: 4G, 1.5GiB, ...;\n"
    "        0 < LO < HI).\n"
    "    --json\n"
    "        One JSON object instead of text.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Replayed (refusals are results, not errors).\n"
    "    1   FILE could not be read, or a replay failed to run.\n"
    "    2   Usage error, or the policy is invalid.\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem replay t.gmr --limit 16G --mode static\n"
    "    gpumem replay torch_default.trace --sweep 1G:4G\n"
    "    gpumem replay t.gmr --limit 60% --on-oom spill --json\n";

/* One device's figures in a replay. */
struct devres {
    unsigned dev;
    unsigned long long peak, context, limit, refused, live_allocs, live_bytes;
};

struct res {
    uint64_t events, calls, skipped, orphan, unsupported, refused_calls;
    uint64_t first_step, first_t, first_size, first_dev, replay_ns, slow_ns;
    uint64_t physical, limit, peak, context, allocs, frees, refused, spills;
    uint64_t spilled, waits, over, frag_ppm, live_allocs, live_bytes, used;
    uint64_t context_rc, context_size;  /* the context was not made */
    int status;
    uint64_t steps[1000];
    size_t nsteps;
    struct devres dev[SIM_DEVICES];  /* the devices used, ascending */
    size_t ndev;
};

struct ctx {
    const char *file;
    char replayer[PATH_MAX], driver[PATH_MAX];
    uint64_t devsize;
    unsigned ndev;      /* simulated devices: the file's highest + 1 */
    bool json;
    bool pace;          /* --pace: calls at their recorded times */
    bool together;      /* --together: every process at once */
    uint64_t origin;    /* paced: CLOCK_REALTIME ns of the first event */
};

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "gpumem: replay: %s%s%s; usage: gpumem replay FILE "
            "[RUN OPTIONS] [--sweep LO:HI] [--json] (gpumem replay --help)\n",
            msg, arg ? " " : "", arg ? arg : "");
    return GM_EXIT_USAGE;
}

static int find_near(const char *const *rel, size_t n, char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = '\0';
    char *dir = dirname(exe);
    for (size_t i = 0; i < n; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL &&
            strlen(out) < cap)
            return 0;
    }
    return -1;
}

static void set_field(struct res *r, const char *k, uint64_t v)
{
    static const struct { const char *k; size_t off; } f[] = {
#define F(name, field) { name, offsetof(struct res, field) }
        F("events", events), F("calls", calls), F("skipped", skipped),
        F("orphan_frees", orphan), F("unsupported", unsupported),
        F("refused_calls", refused_calls), F("first_refusal_step", first_step),
        F("first_refusal_t_ns", first_t), F("first_refusal_size", first_size),
        F("first_refusal_device", first_dev),
        F("replay_ns", replay_ns), F("wait_ns", slow_ns),
        F("physical", physical), F("limit", limit), F("peak", peak),
        F("context", context), F("allocs", allocs), F("frees", frees),
        F("refused", refused), F("spills", spills),
        F("spilled_bytes", spilled), F("waits", waits),
        F("over_limit", over), F("frag_at_peak_ppm", frag_ppm),
        F("live_allocs", live_allocs), F("live_bytes", live_bytes),
        F("used", used), F("context_rc", context_rc),
        F("context_size", context_size),
#undef F
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (strcmp(f[i].k, k) == 0)
            *(uint64_t *)((char *)r + f[i].off) = v;
}

/* One replay of process `pid` with `limit` (NULL: the environment's). */
/* Start the replay of section `sec` of the file (limit NULL: the
 * environment's); its output comes on *fd. Returns the child, or -1. */
static pid_t replay_spawn(const struct ctx *c, size_t sec, const char *limit,
                          int *fd)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t ch = fork();
    if (ch < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (ch == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        if (limit != NULL)
            setenv("GPUMEM_LIMIT", limit, 1);
        char size[32], secs[16], ndev[16];
        snprintf(size, sizeof size, "%llu", (unsigned long long)c->devsize);
        snprintf(secs, sizeof secs, "%zu", sec);
        snprintf(ndev, sizeof ndev, "%u", c->ndev);
        setenv("SIMCUDA_MEMORY", size, 1);      /* each device's */
        setenv("SIMCUDA_DEVICES", ndev, 1);
        unsetenv("CUDA_VISIBLE_DEVICES");       /* ordinals as recorded */
        setenv("GPUMEM_CUDA_LIBRARY", c->driver, 1);
        unsetenv("GPUMEM_REPORT");
        setenv("GPUMEM_LOG_LEVEL", "quiet", 0); /* refusals are results */
        setenv("GPUMEM_TELEMETRY", "1", 1);     /* the figures come from it */
        unsetenv("GPUMEM_KEEP");
        unsetenv("GPUMEM_RECORD");
        char origin[32];
        snprintf(origin, sizeof origin, "%llu", (unsigned long long)c->origin);
        if (c->origin != 0 && c->together)
            execl(c->replayer, c->replayer, "--driver", c->driver, "--section",
                  secs, "--pace", origin, "--together", c->file, (char *)NULL);
        else if (c->origin != 0)
            execl(c->replayer, c->replayer, "--driver", c->driver, "--section",
                  secs, "--pace", origin, c->file, (char *)NULL);
        else
            execl(c->replayer, c->replayer, "--driver", c->driver, "--section",
                  secs, c->file, (char *)NULL);
        fprintf(stderr, "gpumem: replay: cannot execute %s: %s\n",
                c->replayer, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    *fd = fds[0];
    return ch;
}

/* Read a spawned replay's figures and reap it. 0, or -1 when it failed. */
static int replay_collect(pid_t ch, int fd, struct res *r)
{
    memset(r, 0, sizeof *r);
    FILE *in = fdopen(fd, "r");
    char line[512];
    while (in != NULL && fgets(line, sizeof line, in) != NULL) {
        char k[64];
        unsigned long long v;
        struct devres d;
        if (r->ndev < SIM_DEVICES &&
            sscanf(line, "device %u %llu %llu %llu %llu %llu %llu", &d.dev,
                   &d.peak, &d.context, &d.limit, &d.refused,
                   &d.live_allocs, &d.live_bytes) == 7) {
            r->dev[r->ndev++] = d;
            continue;
        }
        if (sscanf(line, "%63s %llu", k, &v) != 2)
            continue;
        if (strcmp(k, "refusal_step") == 0 && r->nsteps < 1000)
            r->steps[r->nsteps++] = v;
        else
            set_field(r, k, v);
    }
    if (in != NULL)
        fclose(in);
    int st = 0;
    while (waitpid(ch, &st, 0) < 0 && errno == EINTR)
        ;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r->status == 0 ? 0 : -1;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sz(uint64_t b, char *buf, size_t cap)
{
    gm_size_short(b, buf, cap);
}

/* A replay that failed (`what`: "of pid N", "at LIMIT"), on stderr; a
 * device too small for the context says what it must hold. */
static void say_failed(const struct ctx *c, const char *what,
                       const struct res *r)
{
    char dev[32], ctx[32];
    sz(c->devsize, dev, sizeof dev);
    if (r->context_rc == 2 && r->context_size > 0) {
        sz(r->context_size, ctx, sizeof ctx);
        fprintf(stderr, "gpumem: replay: --device-size %s is below the "
                "context's %s (the simulated driver's SIMCUDA_CONTEXT): "
                "nothing can be replayed; give at least %s for the context "
                "alone, or leave --device-size out (the default holds the "
                "recording)\n", dev, ctx, ctx);
    } else if (r->context_rc == 2) {
        fprintf(stderr, "gpumem: replay: the context does not fit on a "
                "device of --device-size %s; give a larger one\n", dev);
    } else {
        fprintf(stderr, "gpumem: replay: the replay %s failed (exit %d)\n",
                what, r->status);
    }
}

static int replay_once(struct ctx *c, size_t sec, const char *limit,
                       struct res *r)
{
    if (c->pace)
        c->origin = realtime_ns() + 20000000ull; /* 20 ms to start up */
    int fd;
    pid_t ch = replay_spawn(c, sec, limit, &fd);
    if (ch < 0) {
        memset(r, 0, sizeof *r);
        r->status = 126;
        return -1;
    }
    return replay_collect(ch, fd, r);
}

/* A device's line of a replay that used several. */
static void print_dev_text(const struct devres *d)
{
    char a[32], b[32], l[32];
    sz(d->peak, a, sizeof a);
    sz(d->context, b, sizeof b);
    sz(d->live_bytes, l, sizeof l);
    printf("  device %-6u peak %s, context %s, refused %llu, live at end "
           "%llu allocations, %s\n", d->dev, a, b, d->refused,
           d->live_allocs, l);
}

static void print_text(uint32_t pid, const char *policy, const struct res *r)
{
    char a[32], b[32], d[32];
    printf("pid %u: %llu events, %llu calls replayed under %s\n", pid,
           (unsigned long long)r->events, (unsigned long long)r->calls,
           policy);
    sz(r->peak, a, sizeof a);
    sz(r->context, b, sizeof b);
    if (r->ndev > 1)
        printf("  peak          %s (%llu bytes), context %s: the largest of "
               "%zu devices\n", a, (unsigned long long)r->peak, b, r->ndev);
    else
        printf("  peak          %s (%llu bytes), context %s\n", a,
               (unsigned long long)r->peak, b);
    if (r->refused_calls == 0) {
        printf("  refusals      0\n");
    } else {
        char on[32] = "";
        if (r->ndev > 1)
            snprintf(on, sizeof on, " on device %llu",
                     (unsigned long long)r->first_dev);
        sz(r->first_size, d, sizeof d);
        printf("  refusals      %llu; the first at step %llu at %.3f s; %s%s\n",
               (unsigned long long)r->refused_calls,
               (unsigned long long)r->first_step, r->first_t / 1e9, d, on);
    }
    sz(r->spilled, a, sizeof a);
    printf("  spills        %llu (%s)\n", (unsigned long long)r->spills, a);
    printf("  waits         %llu (%.3f s)\n", (unsigned long long)r->waits,
           r->slow_ns / 1e9);
    if (r->over)
        printf("  over limit    %llu calls let past the limit (on_oom=warn)\n",
               (unsigned long long)r->over);
    printf("  frag at peak  %.1f%%\n", r->frag_ppm / 1e4);
    sz(r->live_bytes, a, sizeof a);
    printf("  live at end   %llu allocations, %s\n",
           (unsigned long long)r->live_allocs, a);
    printf("  allocations   %llu, frees %llu\n", (unsigned long long)r->allocs,
           (unsigned long long)r->frees);
    for (size_t i = 0; r->ndev > 1 && i < r->ndev; i++)
        print_dev_text(&r->dev[i]);
    if (r->skipped || r->orphan || r->unsupported)
        printf("  not replayed  %llu failed in the recording, %llu frees of "
               "refused allocations, %llu arrays\n",
               (unsigned long long)r->skipped, (unsigned long long)r->orphan,
               (unsigned long long)r->unsupported);
}

/* A limit for JSON: its bytes, or null for none (0), as gpumem ps. */
static const char *json_limit(uint64_t v, char *buf, size_t cap)
{
    if (v == 0)
        return "null";
    snprintf(buf, cap, "%llu", (unsigned long long)v);
    return buf;
}

static void print_json_res(uint32_t pid, const struct res *r)
{
    char lim[32];
    printf("{\"pid\":%u,\"events\":%llu,\"calls\":%llu,\"peak_bytes\":%llu,"
           "\"context_bytes\":%llu,\"limit_bytes\":%s,\"refusals\":%llu,",
           pid, (unsigned long long)r->events, (unsigned long long)r->calls,
           (unsigned long long)r->peak, (unsigned long long)r->context,
           json_limit(r->limit, lim, sizeof lim),
           (unsigned long long)r->refused_calls);
    if (r->refused_calls)
        printf("\"first_refusal\":{\"step\":%llu,\"t_ns\":%llu,\"size\":%llu,"
               "\"device\":%llu},", (unsigned long long)r->first_step,
               (unsigned long long)r->first_t,
               (unsigned long long)r->first_size,
               (unsigned long long)r->first_dev);
    else
        printf("\"first_refusal\":null,");
    printf("\"refusal_steps\":[");
    for (size_t i = 0; i < r->nsteps; i++)
        printf("%s%llu", i ? "," : "", (unsigned long long)r->steps[i]);
    printf("],");
    printf("\"spills\":%llu,\"spilled_bytes\":%llu,\"over_limit\":%llu,"
           "\"waits\":%llu,\"wait_ns\":%llu,\"refused\":%llu,\"frag_at_peak_ppm\":%llu,\"live_allocs\":%llu,"
           "\"live_bytes\":%llu,\"allocs\":%llu,\"frees\":%llu,"
           "\"skipped\":%llu,\"orphan_frees\":%llu,\"unsupported\":%llu,"
           "\"replay_ns\":%llu,\"devices\":[",
           (unsigned long long)r->spills, (unsigned long long)r->spilled,
           (unsigned long long)r->over, (unsigned long long)r->waits,
           (unsigned long long)r->slow_ns,
           (unsigned long long)r->refused, (unsigned long long)r->frag_ppm,
           (unsigned long long)r->live_allocs,
           (unsigned long long)r->live_bytes, (unsigned long long)r->allocs,
           (unsigned long long)r->frees, (unsigned long long)r->skipped,
           (unsigned long long)r->orphan, (unsigned long long)r->unsupported,
           (unsigned long long)r->replay_ns);
    for (size_t i = 0; i < r->ndev; i++) {
        const struct devres *d = &r->dev[i];
        printf("%s{\"device\":%u,\"peak_bytes\":%llu,\"context_bytes\":%llu,"
               "\"limit_bytes\":%s,\"refused\":%llu,\"live_allocs\":%llu,"
               "\"live_bytes\":%llu}", i ? "," : "", d->dev, d->peak,
               d->context, json_limit(d->limit, lim, sizeof lim), d->refused,
               d->live_allocs, d->live_bytes);
    }
    printf("]}");
}

/* FILE "-": standard input, copied once into a private temporary file
 * ($TMPDIR, else /tmp) that is removed at once; its descriptor stays
 * open (inherited by the replays, which read the copy by the name
 * /proc/self/fd/N, put in path). Returns the descriptor, or -1 with a
 * message (a terminal is refused: a recording is piped or redirected). */
static int stdin_copy(char *path, size_t cap)
{
    if (isatty(STDIN_FILENO)) {
        fprintf(stderr, "gpumem: replay: FILE '-' reads the standard input, "
                "which is a terminal; pipe or redirect a recording or a "
                "trace into it (gpumem replay - < t.gmr), or name the "
                "file\n");
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    char tpl[PATH_MAX];
    snprintf(tpl, sizeof tpl, "%s/gpumem-replay.XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    int fd = mkstemp(tpl);
    if (fd < 0) {
        fprintf(stderr, "gpumem: replay: cannot make a copy of the standard "
                "input in %s: %s; set TMPDIR to a writable directory\n",
                tpl, strerror(errno));
        return -1;
    }
    unlink(tpl);
    char buf[65536];
    ssize_t k;
    int rc = 0;
    while (rc == 0 && (k = read(STDIN_FILENO, buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 || gm_write_all(fd, buf, (size_t)k) != 0)
            rc = -1;
    }
    if (rc != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        fprintf(stderr, "gpumem: replay: cannot copy the standard input to "
                "%s: %s\n", tpl, strerror(errno));
        close(fd);
        return -1;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static int parse_size(const char *s, uint64_t *out)
{
    return gm_parse_size(s, out) == 0 ? 0 : -1;
}

static const char *mode_now(void)
{
    const char *m = getenv("GPUMEM_MODE");
    return m && *m ? m : "grow";
}

/* "limit=4G mode=static ..." from the environment the replays get. */
static const char *label(void)
{
    static char buf[512];
    static const char *const v[] = { "GPUMEM_LIMIT", "GPUMEM_MODE",
        "GPUMEM_STATIC_SIZE", "GPUMEM_ON_OOM", "GPUMEM_WARMUP",
        "GPUMEM_GROUP" };
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const char *s = getenv(v[i]);
        if (s && *s && o < sizeof buf) {
            char name[32];
            size_t k;
            for (k = 0; v[i][7 + k] && k + 1 < sizeof name; k++)
                name[k] = (char)(v[i][7 + k] == '_' ? '_'
                                 : v[i][7 + k] - 'A' + 'a');
            name[k] = '\0';
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s=%s",
                                  o ? " " : "", name, s);
        }
    }
    return o ? buf : "no limit";
}

/* What a grow-mode search needs to know of a process's requests. */
struct need {
    uint64_t largest; /* the largest request charged its size */
    bool pooled;      /* a stream-ordered request: a pool to reclaim */
};

/* The requests of process p the replay issues (those the recording
 * served or refused for memory). Pitched requests and arrays, charged
 * what the driver chooses, do not count towards the largest. */
static struct need need_of(const struct gm_trace *t, const struct gm_tproc *p)
{
    struct need n = { 0, false };
    for (size_t k = 0; k < p->count; k++) {
        const struct gm_tev *e = &t->ev[p->first + k];
        if (!gm_rec_op_allocates(e->op) || (e->rc != 0 && e->rc != 2))
            continue;
        n.pooled |= e->op == GM_RO_ASYNC || e->op == GM_RO_POOL_ALLOC;
        if (e->op != GM_RO_PITCH && e->op != GM_RO_ARRAY && e->size > n.largest)
            n.largest = e->size;
    }
    return n;
}

/* Whether a replay served every call within its limit: none refused,
 * and none the out-of-memory policy let through another way (spilled to
 * managed memory, let past the limit, or waited for). Under on_oom=fail
 * the three are 0, and this is "no refusal". */
static bool served(const struct res *r)
{
    return r->refused_calls == 0 && r->spills == 0 && r->over == 0 &&
           r->waits == 0;
}

/* The policy's help a sweep counts besides refusals: its column's title,
 * the figure of a replay, and the words of the answer ("no refusal and
 * no spill"). Under on_oom=fail there is none (title NULL). */
struct helped {
    const char *title, *answer;
    enum gm_on_oom oom;
};

static struct helped helped_now(void)
{
    static struct gm_policy p;
    static struct gm_diag d;
    static struct gm_admin_file admin;
    enum gm_on_oom o = gm_policy_load_node(&p, environ, &admin, &d) == 0
                           ? p.on_oom : GM_OOM_FAIL;
    switch (o) {
    case GM_OOM_SPILL:
        return (struct helped){ "spills", "no refusal and no spill", o };
    case GM_OOM_WARN:
        return (struct helped){ "over limit",
                                "no refusal and no call let past it", o };
    case GM_OOM_WAIT:
        return (struct helped){ "waits", "no refusal and no wait", o };
    default:
        return (struct helped){ NULL, "no refusal", GM_OOM_FAIL };
    }
}

static uint64_t helped_count(const struct helped *h, const struct res *r)
{
    return h->oom == GM_OOM_SPILL ? r->spills
           : h->oom == GM_OOM_WARN ? r->over : r->waits;
}

/* One replay of section sec at limit l; true when it ran and served
 * every call within the limit. */
static bool clean_at(struct ctx *c, size_t sec, uint64_t l, unsigned *runs)
{
    char lim[32];
    struct res r;
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)l);
    (*runs)++;
    return replay_once(c, sec, lim, &r) == 0 && served(&r);
}

/* Bisection to 1 MiB between a limit that refuses (a, not replayed
 * again) and one that does not (b): the smallest limit found to refuse
 * nothing. */
static uint64_t bisect_clean(struct ctx *c, size_t sec, uint64_t a,
                             uint64_t b, unsigned *runs)
{
    while (b > a && b - a > (1ull << 20)) {
        uint64_t m = a + (b - a) / 2;
        if (clean_at(c, sec, m, runs))
            b = m;
        else
            a = m;
    }
    return b;
}

/* Grow mode: the unlimited replay's peak (context included) refuses
 * nothing. With no stream-ordered request, use under any limit that
 * refuses nothing is the same as without one, so that peak is the
 * answer (one replay to confirm). A pool, though, is trimmed before a
 * refusal ("Reclaim before refusing"), so a lower limit may serve every
 * call: then bisection from the context plus the largest request (any
 * limit below refuses that request) up to the peak. */
static bool search_grow(struct ctx *c, size_t sec, struct need n,
                        uint64_t *best, unsigned *runs)
{
    struct res r;
    replay_once(c, sec, "none", &r);
    (*runs)++;
    uint64_t peak = r.peak, floor = r.context + n.largest;
    if (!clean_at(c, sec, peak, runs))
        return false;
    *best = peak;
    if (n.pooled && floor > 0 && floor <= peak)
        *best = bisect_clean(c, sec, floor - 1, peak, runs);
    return true;
}

/* Static and staged modes: what fits depends on the arena's
 * fragmentation, so the sweep's ends are searched by bisection. */
static bool search_arena(struct ctx *c, size_t sec, uint64_t lo, uint64_t hi,
                         uint64_t *best, unsigned *runs)
{
    if (!clean_at(c, sec, hi, runs))
        return false;
    *best = bisect_clean(c, sec, lo, hi, runs);
    return true;
}

/* One row of a sweep's table: the limit, the peak, the refusals (with
 * the first), and under a policy that helps (spill, warn, wait) its
 * count. */
static void sweep_row(const struct ctx *c, const struct helped *h,
                      bool first, uint64_t l, const struct res *r)
{
    char a[32], b[32], d[32], n[24] = "";
    sz(l, a, sizeof a);
    sz(r->peak, b, sizeof b);
    if (c->json) {
        printf("%s{\"limit_bytes\":%llu,\"peak_bytes\":%llu,"
               "\"refusals\":%llu,\"first_refusal_step\":%llu,"
               "\"spills\":%llu,\"over_limit\":%llu,\"waits\":%llu}",
               first ? "" : ",", (unsigned long long)l,
               (unsigned long long)r->peak,
               (unsigned long long)r->refused_calls,
               (unsigned long long)r->first_step,
               (unsigned long long)r->spills, (unsigned long long)r->over,
               (unsigned long long)r->waits);
        return;
    }
    if (h->title != NULL)
        snprintf(n, sizeof n, "%-11llu ",
                 (unsigned long long)helped_count(h, r));
    if (r->refused_calls) {
        sz(r->first_size, d, sizeof d);
        printf("  %-14s %-14s %s%-9llu step %llu (%s)\n", a, b, n,
               (unsigned long long)r->refused_calls,
               (unsigned long long)r->first_step, d);
    } else {
        printf("  %-14s %-14s %s%-9s -\n", a, b, n, "0");
    }
}

static int sweep(struct ctx *c, size_t sec, uint32_t pid, struct need need,
                 uint64_t lo, uint64_t hi, unsigned points)
{
    char lim[32];
    struct res r;
    struct helped h = helped_now();
    if (!c->json)
        printf("pid %u: sweep %s mode\n  %-14s %-14s %-*s%-9s %s\n", pid,
               mode_now(), "limit", "peak", h.title ? 12 : 0,
               h.title ? h.title : "", "refusals", "first refusal");
    else
        printf("{\"pid\":%u,\"mode\":\"%s\",\"sweep\":[", pid, mode_now());
    for (unsigned i = 0; i < points; i++) {
        uint64_t l = points == 1 ? lo : lo + (hi - lo) / (points - 1) * i;
        if (i == points - 1)
            l = hi;
        snprintf(lim, sizeof lim, "%llu", (unsigned long long)l);
        if (replay_once(c, sec, lim, &r) != 0 && r.peak == 0) {
            char what[48];
            snprintf(what, sizeof what, "at %s", lim);
            say_failed(c, what, &r);
            return 1;
        }
        sweep_row(c, &h, i == 0, l, &r);
    }
    /* The smallest limit that serves every call within it. */
    uint64_t best = 0;
    unsigned runs = 0;
    bool found = strcmp(mode_now(), "grow") == 0
                     ? search_grow(c, sec, need, &best, &runs)
                     : search_arena(c, sec, lo, hi, &best, &runs);
    char a[32];
    sz(best, a, sizeof a);
    if (c->json) {
        if (found)
            printf("],\"smallest_without_refusal_bytes\":%llu,",
                   (unsigned long long)best);
        else
            printf("],\"smallest_without_refusal_bytes\":null,");
        printf("\"criterion\":\"%s\",\"search_replays\":%u}\n", h.answer,
               runs);
    } else if (found && r.ndev > 1) {
        printf("  smallest limit with %s: %s (%llu bytes; %u replays), on "
               "each of %zu devices\n", h.answer, a,
               (unsigned long long)best, runs, r.ndev);
    } else if (found) {
        printf("  smallest limit with %s: %s (%llu bytes; %u replays)\n",
               h.answer, a, (unsigned long long)best, runs);
    } else {
        printf("  no limit up to the sweep's top has %s\n", h.answer);
    }
    return 0;
}

int gm_cmd_replay(int argc, char **argv)
{
    struct ctx c = { .devsize = 80ull << 30 };
    const char *file = NULL, *sw = NULL;
    long pid = -1;
    unsigned points = 9;
    bool devset = false;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if ((r = gm_opt_flag("replay", argv[i], "--json")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            c.json = true;
            continue;
        }
        if ((r = gm_opt_flag("replay", argv[i], "--pace")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            c.pace = true;
            continue;
        }
        if ((r = gm_opt_flag("replay", argv[i], "--together")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            c.together = c.pace = true;
            continue;
        }
        if ((r = gm_opt_value("replay", argc, argv, &i, "--sweep", &v)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            sw = v;
            continue;
        }
        if ((r = gm_opt_value("replay", argc, argv, &i, "--points", &v)) != 0) {
            char *end;
            if (r < 0)
                return GM_EXIT_USAGE;
            unsigned long n = strtoul(v, &end, 10);
            if (*end || n < 2 || n > 100)
                return usage("--points takes 2 to 100, not", v);
            points = (unsigned)n;
            continue;
        }
        if ((r = gm_opt_value("replay", argc, argv, &i, "--pid", &v)) != 0) {
            uint64_t n;
            if (r < 0)
                return GM_EXIT_USAGE;
            /* a recorded pid is 32 bits; a larger one wrapped onto
             * another process's */
            if (gm_parse_uint(v, &n) != 0 || n == 0 || n > 0x7fffffff)
                return usage("--pid takes a process id (1 to 2147483647), "
                             "not", v);
            pid = (long)n;
            continue;
        }
        if ((r = gm_opt_value("replay", argc, argv, &i, "--device-size",
                              &v)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            if (parse_size(v, &c.devsize) != 0 || c.devsize == 0)
                return usage("--device-size takes a size (80G), not", v);
            devset = true;
            continue;
        }
        r = gm_run_apply_opt("replay", argc, argv, &i);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r > 0)
            continue;
        if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0)
            return usage("unknown option", argv[i]);
        if (file != NULL)
            return usage("one FILE only; unexpected", argv[i]);
        file = argv[i];
    }
    if (file == NULL)
        return usage("no FILE given", NULL);
    c.file = file;
    uint64_t lo = 0, hi = 0;
    if (sw != NULL) {
        char a[64], b[64];
        const char *colon = strchr(sw, ':');
        if (colon == NULL || (size_t)(colon - sw) >= sizeof a ||
            strlen(colon + 1) >= sizeof b)
            return usage("--sweep takes LO:HI (1G:4G), not", sw);
        memcpy(a, sw, (size_t)(colon - sw));
        a[colon - sw] = '\0';
        snprintf(b, sizeof b, "%s", colon + 1);
        if (parse_size(a, &lo) != 0 || parse_size(b, &hi) != 0 || lo >= hi)
            return usage("--sweep takes LO:HI with LO < HI, not", sw);
        if (lo == 0) /* 0 is no limit, not the smallest one */
            return usage("--sweep takes LO:HI with LO above 0 (a limit of "
                         "0 is none), not", sw);
    }
    char in_path[64];
    if (strcmp(file, "-") == 0) {
        if (stdin_copy(in_path, sizeof in_path) < 0)
            return 1;
        c.file = in_path;
        file = "the standard input";
    }
    struct gm_trace t;
    char err[512];
    if (gm_trace_load(c.file, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem: replay: %s: %s\n", file, err);
        return 1;
    }
    for (size_t i = 0; i < t.nproc; i++)
        if (t.proc[i].lost)
            fprintf(stderr, "gpumem: replay: %s: pid %u lost %llu records "
                    "when it was recorded; what follows replays the rest, "
                    "so its figures can be below the run's\n", file,
                    t.proc[i].pid, (unsigned long long)t.proc[i].lost);
    bool used[GM_TRACE_DEVICES];
    c.ndev = gm_trace_devices(&t, NULL, used);
    if (c.ndev > SIM_DEVICES) {
        fprintf(stderr, "gpumem: replay: %s: the recording uses device %u; "
                "the simulated driver has devices 0 to %d only\n", file,
                c.ndev - 1, SIM_DEVICES - 1);
        gm_trace_free(&t);
        return 1;
    }
    if (!devset) { /* room for what the recording held, twice over */
        uint64_t most = 0;
        for (size_t i = 0; i < t.nproc; i++) {
            uint64_t pk = gm_trace_peak(&t, &t.proc[i]);
            most = pk > most ? pk : most;
        }
        if (most * 2 + (1ull << 30) > c.devsize)
            c.devsize = (most * 2 + (1ull << 30)) & ~((1ull << 20) - 1);
    }
    static const char *const rrel[] = { "gpumem-replay",
                                        "../lib/gpumem/gpumem-replay" };
    static const char *const drel[] = { "sim/libcuda.so.1",
                                        "../lib/gpumem/sim/libcuda.so.1" };
    if (find_near(rrel, 2, c.replayer, sizeof c.replayer) != 0 ||
        find_near(drel, 2, c.driver, sizeof c.driver) != 0) {
        fprintf(stderr, "gpumem: replay: gpumem-replay or the simulated "
                "driver (sim/libcuda.so.1) not found next to gpumem\n");
        gm_trace_free(&t);
        return 1;
    }
    if (sw != NULL) { /* each replay of a sweep sets its own limit */
        char top[32];
        snprintf(top, sizeof top, "%llu", (unsigned long long)hi);
        setenv("GPUMEM_LIMIT", top, 1);
    }
    int rc = gm_run_setup("replay");
    if (rc != 0) {
        gm_trace_free(&t);
        return rc;
    }
    if (c.together && sw != NULL) {
        fprintf(stderr, "gpumem: replay: --together and --sweep do not "
                "combine; sweep one process (--pid N)\n");
        gm_trace_free(&t);
        return GM_EXIT_USAGE;
    }
    bool any = false;
    struct res *all = NULL;
    if (c.together) { /* start every process's replay, then read them */
        all = calloc(t.nproc, sizeof *all);
        pid_t *ch = calloc(t.nproc, sizeof *ch);
        int *fd = calloc(t.nproc, sizeof *fd);
        if (all == NULL || ch == NULL || fd == NULL) {
            fprintf(stderr, "gpumem: replay: out of memory\n");
            return 1;
        }
        c.origin = realtime_ns() + 50000000ull; /* 50 ms to start up */
        for (size_t i = 0; i < t.nproc; i++)
            ch[i] = (pid > 0 && t.proc[i].pid != (uint32_t)pid) ||
                    t.proc[i].count == 0
                        ? 0 : replay_spawn(&c, i, NULL, &fd[i]);
        for (size_t i = 0; i < t.nproc; i++)
            if (ch[i] > 0)
                replay_collect(ch[i], fd[i], &all[i]);
            else if (ch[i] < 0)
                all[i].status = 126;
        free(ch);
        free(fd);
    }
    if (c.json && sw == NULL)
        printf("{\"device_bytes\":%llu,\"processes\":[",
               (unsigned long long)c.devsize);
    for (size_t i = 0; i < t.nproc; i++) {
        const struct gm_tproc *p = &t.proc[i];
        if (pid > 0 && p->pid != (uint32_t)pid)
            continue;
        if (p->count == 0)
            continue;
        if (sw != NULL) {
            if (sweep(&c, i, p->pid, need_of(&t, p), lo, hi, points) != 0)
                rc = 1;
            any = true;
            continue;
        }
        struct res r;
        if (all != NULL)
            r = all[i];
        else
            replay_once(&c, i, NULL, &r);
        if (r.status != 0 && r.peak == 0) {
            char what[48];
            snprintf(what, sizeof what, "of pid %u", p->pid);
            say_failed(&c, what, &r);
            rc = 1;
            continue;
        }
        if (c.json) {
            if (any)
                putchar(',');
            print_json_res(p->pid, &r);
        } else {
            print_text(p->pid, label(), &r);
        }
        any = true;
    }
    if (c.json && sw == NULL)
        printf("]}\n");
    if (!any && rc == 0) {
        if (pid > 0)
            fprintf(stderr, "gpumem: replay: %s holds no process %ld\n",
                    file, pid);
        else
            fprintf(stderr, "gpumem: replay: %s holds no events\n", file);
        rc = 1;
    }
    free(all);
    gm_trace_free(&t);
    return rc;
}

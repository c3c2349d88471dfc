/*
 * tools/cli/cmd_fit.c — `gpumem fit --limit L --param NAME=LO:HI
 * [--headroom P] [--max-runs N] [--json] -- CMD ... {NAME} ...`: the
 * largest integer value of NAME for which CMD, run under the limit,
 * exits 0 with no refusal.
 *
 * Each run's exit reports (GPUMEM_REPORT=json, one line per process of
 * CMD) give its peak: the largest of any process on any device; a
 * refusal in any process means the value does not fit. Memory is
 * close to affine in a batch-like parameter (fixed + per item), so once
 * two values are known to fit, the next candidate is where the line
 * through their peaks meets the limit, and then the value after it, to
 * prove the boundary; a candidate outside the open interval between the
 * largest value known to fit and the smallest known not to, or a
 * prediction that did not halve that interval, is replaced by its
 * midpoint (bisection). A guess (a prediction, or the value after one)
 * is run only when bisection could still close the interval in the runs
 * left after it, whatever the guess answers (may_guess), so memory that
 * is not affine (peaks in steps of a pool's chunk) costs the guesses'
 * runs, never the proof. The default budget is the two ends, bisection's
 * ceil(log2(HI-LO)) and two runs for guesses that miss.
 *
 * Invariants: the answer was run and fitted; answer + 1 was run and did
 * not fit, or is past HI, or a --max-runs below bisection's need ended
 * the search (said so); at most --max-runs runs (default
 * ceil(log2(HI-LO)) + 4, within which the boundary is always proved).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/parse.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

const char gm_help_fit[] =
    "NAME\n"
    "    gpumem fit - find the largest parameter value that fits a limit\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem fit --limit SIZE --param NAME=LO:HI [--headroom P]\n"
    "               [--max-runs N] [--json] [RUN OPTIONS]\n"
    "               -- CMD [ARGS...]   (ARGS contain {NAME})\n"
    "\n"
    "DESCRIPTION\n"
    "    Runs CMD under libgpumem.so with the limit, {NAME} in its\n"
    "    arguments replaced by a candidate value, and finds the largest\n"
    "    integer value in LO..HI for which CMD exits 0 with no refusal in\n"
    "    any of its processes. A run's peak is the largest in the exit\n"
    "    reports of all its processes (any device); once two values fit, the\n"
    "    next candidate is predicted from their peaks (memory is close to\n"
    "    fixed + per-item in a batch size), then the value after it is run\n"
    "    to prove the boundary; when a prediction misses, bisection takes\n"
    "    over. A guess is run only when bisection could still finish in the\n"
    "    runs left, so within the default budget the answer is always\n"
    "    proved: it fits and the value after it does not (or is past HI).\n"
    "    Every run is printed (value, peak, refusals, exit status,\n"
    "    seconds), then the answer and the headroom left at it, or that no\n"
    "    value fits.\n"
    "\n"
    "OPTIONS\n"
    "    --limit SIZE\n"
    "        The limit to fit under (bytes: 4G, 1.5GiB, ...).\n"
    "    --param NAME=LO:HI\n"
    "        The integer parameter and its range (0 <= LO < HI).\n"
    "    --headroom P\n"
    "        A value fits only when its peak leaves P of the limit free\n"
    "        (10%; default 0%).\n"
    "    --max-runs N\n"
    "        Stop after N runs (default ceil(log2(HI-LO)) + 4: the two\n"
    "        ends, bisection and two runs for guesses). A budget that ends\n"
    "        first leaves the answer unproved, and the answer line says so\n"
    "        with the values not run.\n"
    "    --json\n"
    "        One JSON object instead of text.\n"
    "    RUN OPTIONS\n"
    "        --mode, --on-oom, ... as for gpumem run.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   A value fits (the answer is printed).\n"
    "    1   No value in LO..HI fits, or CMD could not be run.\n"
    "    2   Usage error, or the policy is invalid.\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem fit --limit 2G --param batch=1:512 -- gpumem-trainsim \\\n"
    "        --steps 3 --batch {batch}\n";

struct run {
    long long value;
    uint64_t peak, refused;   /* the largest of its processes; all of theirs */
    int status, reports;      /* reports: its processes that reported */
    double secs;
    bool fits;
};

struct fit {
    uint64_t limit;
    double headroom;
    const char *name;
    char **cmd;
    int ncmd;
    char report[256];
    struct run runs[128];
    int nrun, maxrun;
    bool json;
};

/* "LO:HI", two whole numbers (digits only) with 0 <= LO < HI <= LLONG_MAX:
 * 0, or -1 for anything else (a sign, a space, a fraction, an overflow). */
static int parse_range(const char *s, long long *lo, long long *hi)
{
    char a[32];
    const char *colon = strchr(s, ':');
    uint64_t l, h;
    if (colon == NULL || (size_t)(colon - s) >= sizeof a)
        return -1;
    memcpy(a, s, (size_t)(colon - s));
    a[colon - s] = '\0';
    if (gm_parse_uint(a, &l) != 0 || gm_parse_uint(colon + 1, &h) != 0 ||
        h > (uint64_t)LLONG_MAX || l >= h)
        return -1;
    *lo = (long long)l;
    *hi = (long long)h;
    return 0;
}

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "gpumem: fit: %s%s%s; usage: gpumem fit --limit SIZE "
            "--param NAME=LO:HI -- CMD ... {NAME} ... (gpumem fit --help)\n",
            msg, arg ? " " : "", arg ? arg : "");
    return GM_EXIT_USAGE;
}

/* ARG with every {NAME} replaced by v (malloc'd). */
static char *subst(const char *arg, const char *name, long long v)
{
    char key[80], num[32];
    snprintf(key, sizeof key, "{%s}", name);
    snprintf(num, sizeof num, "%lld", v);
    size_t kl = strlen(key), nl = strlen(num), n = 0;
    for (const char *s = strstr(arg, key); s != NULL; s = strstr(s + kl, key))
        n++;
    /* every {NAME} becomes the value, however many and however long (a
     * fixed room cut the argument short, silently) */
    char *out = malloc(strlen(arg) + n * nl + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (const char *s = arg; *s;) {
        if (strncmp(s, key, kl) == 0) {
            memcpy(o, num, nl);
            o += nl;
            s += kl;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

static uint64_t json_sum(const char *text, const char *key)
{
    uint64_t sum = 0;
    size_t kl = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + kl, key))
        sum += strtoull(p + kl, NULL, 10);
    return sum;
}

static uint64_t json_max(const char *text, const char *key)
{
    uint64_t m = 0;
    size_t kl = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + kl, key)) {
        uint64_t v = strtoull(p + kl, NULL, 10);
        m = v > m ? v : m;
    }
    return m;
}

/* The run's reports, one JSON line per process that reported (the shim
 * appends each): the largest peak of any device in any of them, the
 * refusals of all. The number of reports. */
static int read_reports(const char *path, struct run *r)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, in) > 0) {
        if (strstr(line, "\"pid\":") == NULL)
            continue;
        uint64_t peak = json_max(line, "\"peak_bytes\":");
        r->peak = peak > r->peak ? peak : r->peak;
        r->refused += json_sum(line, "\"refused\":");
        n++;
    }
    free(line);
    fclose(in);
    return n;
}

static struct run *run_at(struct fit *f, long long v)
{
    struct run *r = &f->runs[f->nrun++];
    memset(r, 0, sizeof *r);
    r->value = v;
    unlink(f->report);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t ch = fork();
    if (ch == 0) {
        char **av = calloc((size_t)f->ncmd + 1, sizeof *av);
        for (int i = 0; av && i < f->ncmd; i++)
            if ((av[i] = subst(f->cmd[i], f->name, v)) == NULL)
                _exit(126); /* never a command with arguments left out */
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0) {
            dup2(nul, STDOUT_FILENO);
            dup2(nul, STDERR_FILENO);
        }
        char rep[300];
        snprintf(rep, sizeof rep, "json:%s", f->report);
        setenv("GPUMEM_REPORT", rep, 1);
        if (av)
            execvp(av[0], av);
        _exit(127);
    }
    int st = 0;
    if (ch > 0)
        while (waitpid(ch, &st, 0) < 0 && errno == EINTR)
            ;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->secs = (double)(t1.tv_sec - t0.tv_sec) +
              (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    r->status = ch < 0 ? 126 : WIFEXITED(st) ? WEXITSTATUS(st)
                                             : 128 + WTERMSIG(st);
    r->reports = read_reports(f->report, r);
    double room = (double)f->limit * (1.0 - f->headroom);
    r->fits = r->status == 0 && r->refused == 0 && r->reports > 0 &&
              (double)r->peak <= room;
    if (!f->json) {
        char a[32];
        gm_size_short(r->peak, a, sizeof a);
        printf("  %s=%-8lld peak %-10s refusals %-4llu exit %-3d %.2f s%s\n",
               f->name, v, r->reports ? a : "-", (unsigned long long)r->refused,
               r->status, r->secs, r->fits ? "  fits" : "");
        fflush(stdout);
    }
    return r;
}

/* Runs bisection takes to close an interval of width w (the largest
 * value known to fit to the smallest known not to) to width 1: each run
 * at the midpoint leaves at most ceil(w / 2). */
static int bisect_runs(long long w)
{
    int k = 0;
    for (; w > 1; w = w - w / 2)
        k++;
    return k;
}

/* Whether a guess at cand in (good, bad) may be run: bisection can still
 * close whichever part of the interval the guess leaves in the runs left
 * after it, or it could not close the interval anyway (a --max-runs below
 * the default), when a guess is the only chance. */
static bool may_guess(const struct fit *f, long long good, long long bad,
                      long long cand)
{
    int left = f->maxrun - f->nrun;
    long long worst = cand - good > bad - cand ? cand - good : bad - cand;
    return left - 1 >= bisect_runs(worst) || left < bisect_runs(bad - good);
}

int gm_cmd_fit(int argc, char **argv)
{
    struct fit f = { .headroom = 0 };
    const char *limit = NULL, *param = NULL;
    int i, maxrun = 0;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        const char *v = NULL;
        int r;
        if ((r = gm_opt_flag("fit", argv[i], "--json")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            f.json = true;
            continue;
        }
        if ((r = gm_opt_value("fit", argc, argv, &i, "--limit", &v)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            limit = v;
            continue;
        }
        if ((r = gm_opt_value("fit", argc, argv, &i, "--param", &v)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            param = v;
            continue;
        }
        if ((r = gm_opt_value("fit", argc, argv, &i, "--headroom", &v)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            /* 0% is the default, so it is accepted as given too. */
            double pct;
            if (gm_parse_pct_ex(v, &pct, NULL) != GM_PERR_OK || pct < 0 ||
                pct >= 100)
                return usage("--headroom takes NN% from 0% to below 100%, "
                             "not", v);
            f.headroom = pct / 100.0;
            continue;
        }
        if ((r = gm_opt_value("fit", argc, argv, &i, "--max-runs", &v)) != 0) {
            char *end;
            if (r < 0)
                return GM_EXIT_USAGE;
            long n = strtol(v, &end, 10);
            if (*end || n < 2 || n > 128)
                return usage("--max-runs takes 2 to 128, not", v);
            maxrun = (int)n;
            continue;
        }
        r = gm_run_apply_opt("fit", argc, argv, &i);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r == 0)
            return usage("unknown option", argv[i]);
    }
    if (limit == NULL || gm_parse_size(limit, &f.limit) != 0 || f.limit == 0)
        return usage("--limit takes a size in bytes (2G, 1.5GiB), not",
                     limit ? limit : "nothing");
    static char name[64];
    long long lo, hi;
    const char *eq = param ? strchr(param, '=') : NULL;
    if (eq == NULL || eq == param || (size_t)(eq - param) >= sizeof name ||
        parse_range(eq + 1, &lo, &hi) != 0)
        return usage("--param takes NAME=LO:HI, whole numbers with 0 <= LO "
                     "< HI <= 9223372036854775807, not",
                     param ? param : "nothing");
    memcpy(name, param, (size_t)(eq - param));
    name[eq - param] = '\0';
    f.name = name;
    if (i >= argc)
        return usage("no command given", NULL);
    f.cmd = &argv[i];
    f.ncmd = argc - i;
    char key[80];
    snprintf(key, sizeof key, "{%s}", name);
    bool has = false;
    for (int k = 0; k < f.ncmd; k++)
        has |= strstr(f.cmd[k], key) != NULL;
    if (!has)
        return usage("the command has no", key);
    f.maxrun = maxrun ? maxrun
                      : (int)ceil(log2((double)(hi - lo))) + 4;
    if (f.maxrun > 128)
        f.maxrun = 128;
    setenv("GPUMEM_LIMIT", limit, 1);
    int rc = gm_run_setup("fit");
    if (rc != 0)
        return rc;
    /* The runs' reports go to a private directory (never a guessable
     * name in a shared one). */
    const char *tmp = getenv("TMPDIR");
    char dir[200];
    snprintf(dir, sizeof dir, "%s/gpumem-fit.XXXXXX",
             tmp && *tmp == '/' && strlen(tmp) < 150 ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "gpumem: fit: cannot make a directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return 1;
    }
    snprintf(f.report, sizeof f.report, "%s/report.json", dir);
    if (!f.json)
        printf("gpumem fit: %s in %lld..%lld under %s\n", name, lo, hi, limit);

    long long good = -1, bad = -1; /* largest fitting, smallest not */
    const struct run *g1 = NULL, *g2 = NULL; /* two fitting, for the line */
    bool stopped = false;
    struct run *r = run_at(&f, lo);
    if (r->fits) {
        good = lo;
        g1 = r;
        r = run_at(&f, hi);
        if (r->fits) {
            good = hi;
        } else {
            bad = hi;
        }
    } else {
        bad = lo;
    }
    bool predicted_last = false;
    long long width_before = 0;
    while (good >= 0 && bad > good + 1) {
        if (f.nrun >= f.maxrun) {
            stopped = true;
            break;
        }
        long long cand = -1;
        bool from_model = false;
        if (g1 && g2 && g2->peak != g1->peak && g2->value != g1->value &&
            !(predicted_last && (bad - good) * 2 > width_before)) {
            double slope = ((double)g2->peak - (double)g1->peak) /
                           (double)(g2->value - g1->value);
            double room = (double)f.limit * (1.0 - f.headroom);
            if (slope > 0) {
                cand = g2->value +
                       (long long)floor(((room - (double)g2->peak) / slope));
                if (cand <= good)
                    cand = good + 1;
                if (cand >= bad)
                    cand = bad - 1;
                from_model = may_guess(&f, good, bad, cand);
            }
        }
        if (!from_model)
            cand = good + (bad - good) / 2;
        width_before = bad - good;
        predicted_last = from_model;
        r = run_at(&f, cand);
        if (r->fits) {
            good = cand;
            g1 = g2 ? g2 : g1;
            g2 = r;
            if (g1 == g2)
                g1 = NULL;
            /* A prediction that fitted: prove the boundary at once. */
            if (from_model && cand + 1 < bad && f.nrun < f.maxrun &&
                may_guess(&f, good, bad, cand + 1)) {
                r = run_at(&f, cand + 1);
                if (r->fits) {
                    good = cand + 1;
                    g1 = g2;
                    g2 = r;
                } else {
                    bad = cand + 1;
                }
            }
        } else {
            bad = cand;
        }
    }
    const struct run *ans = NULL;
    for (int k = 0; k < f.nrun; k++)
        if (f.runs[k].value == good && f.runs[k].fits)
            ans = &f.runs[k];
    unlink(f.report);
    rmdir(dir);
    if (f.json) {
        printf("{\"param\":\"%s\",\"lo\":%lld,\"hi\":%lld,\"limit_bytes\":%llu,"
               "\"headroom\":%.4f,\"runs\":[", name, lo, hi,
               (unsigned long long)f.limit, f.headroom);
        for (int k = 0; k < f.nrun; k++)
            printf("%s{\"value\":%lld,\"peak_bytes\":%llu,\"refusals\":%llu,"
                   "\"processes\":%d,\"exit\":%d,\"seconds\":%.3f,"
                   "\"fits\":%s}", k ? "," : "", f.runs[k].value,
                   (unsigned long long)f.runs[k].peak,
                   (unsigned long long)f.runs[k].refused, f.runs[k].reports,
                   f.runs[k].status, f.runs[k].secs,
                   f.runs[k].fits ? "true" : "false");
        if (ans)
            printf("],\"answer\":%lld,\"answer_peak_bytes\":%llu,"
                   "\"headroom_bytes\":%llu,\"complete\":%s}\n", good,
                   (unsigned long long)ans->peak,
                   (unsigned long long)(f.limit - ans->peak),
                   stopped ? "false" : "true");
        else
            printf("],\"answer\":null}\n");
    } else if (ans) {
        char a[32], b[32];
        gm_size_short(ans->peak, a, sizeof a);
        gm_size_short(f.limit - ans->peak, b, sizeof b);
        printf("answer: %s=%lld (peak %s, headroom %s = %.1f%% of the "
               "limit; %d runs)", name, good, a, b,
               100.0 * (double)(f.limit - ans->peak) / (double)f.limit,
               f.nrun);
        if (stopped)
            printf("; not proved: the run budget ended with %lld..%lld "
                   "not run (%lld refused)", good + 1, bad - 1, bad);
        printf("\n");
    } else {
        printf("no value of %s in %lld..%lld fits under %s (%s=%lld: exit "
               "%d, %llu refusals)\n", name, lo, hi, limit, name, lo,
               f.runs[0].status, (unsigned long long)f.runs[0].refused);
    }
    return ans ? 0 : 1;
}

/*
 * tools/lib/exportrun.c — the exporter's command line and its two local
 * modes (see tools/lib/metrics.h): --once to standard output, and
 * --textfile DIR, which replaces DIR/gpumem.prom atomically every
 * --interval for node_exporter's textfile collector. The HTTP server is
 * tools/exporter (it needs libmicrohttpd; this file does not).
 *
 * Invariants: the text file is never seen half-written (a temporary file
 * in the same directory, fsync, rename); the temporary file is created
 * with O_EXCL|O_NOFOLLOW relative to a descriptor of the directory, so a
 * planted link is refused, and removed on every failure; the loop waits
 * with nanosleep and ends at SIGINT or SIGTERM after finishing its write.
 */
#include "tools/lib/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/base/safefile.h"
#include "tools/lib/util.h"

int gm_metrics_write_file(const char *dir, const char *name, const char *p,
                          size_t n, char *err, size_t errcap)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errcap, "cannot open directory %s: %s", dir,
                 strerror(errno));
        return -1;
    }
    char tmp[300];
    snprintf(tmp, sizeof tmp, ".%s.%d.tmp", name, (int)getpid());
    unlinkat(dfd, tmp, 0);   /* a leftover of a killed earlier run */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                    O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errcap, "cannot create %s/%s: %s", dir, tmp,
                 strerror(errno));
        close(dfd);
        return -1;
    }
    int e = 0;
    if (gm_write_all(fd, p, n) != 0)
        e = errno ? errno : EIO;
    if (e == 0 && fsync(fd) != 0)
        e = errno;
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0 && renameat(dfd, tmp, dfd, name) != 0)
        e = errno;
    if (e != 0) {
        snprintf(err, errcap, "cannot write %s/%s: %s", dir, name,
                 strerror(e));
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return -1;
    }
    close(dfd);
    return 0;
}

/* ---- options ------------------------------------------------------------- */

static const char usage[] =
    "usage: gpumem exporter [--listen ADDR:PORT | --textfile DIR "
    "[--interval D] | --once] [--compat hami] [--prefix P] [--dead] "
    "[--max-segments N] [--timeout D] [--format prometheus|openmetrics]";

static int bad(const char *opt, const char *val, const char *what)
{
    fprintf(stderr, "gpumem: exporter: %s '%s' is not valid; %s (%s)\n", opt,
            val, what, usage);
    return 2;
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" (default address) or "PORT". */
static int parse_listen(const char *v, struct gm_exporter_cfg *c)
{
    static const char what[] = "give ADDR:PORT, [IPV6]:PORT or :PORT with "
                               "PORT 0..65535 (0: any free port)";
    const char *port = NULL;
    char addr[64] = "";
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (close == NULL || close[1] != ':' ||
            (size_t)(close - v - 1) >= sizeof addr || close == v + 1)
            return bad("--listen", v, what);
        memcpy(addr, v + 1, (size_t)(close - v - 1));
        addr[close - v - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(v, ':');
        if (colon == NULL) {
            port = v;
        } else {
            if (strchr(v, ':') != colon ||
                (size_t)(colon - v) >= sizeof addr)
                return bad("--listen", v, what);
            memcpy(addr, v, (size_t)(colon - v));
            addr[colon - v] = '\0';
            port = colon + 1;
        }
    }
    uint64_t p;
    if (gm_parse_uint(port, &p) != 0 || p > 65535)
        return bad("--listen", v, what);
    if (addr[0])
        snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->port = (unsigned)p;
    return 0;
}

static int parse_duration(const char *opt, const char *v, uint64_t min_ns,
                          uint64_t *out)
{
    uint64_t ns;
    if (gm_parse_duration(v, &ns) != 0 || ns < min_ns || ns > 86400e9)
        return bad(opt, v, min_ns >= 1000000000ull
                   ? "give a duration from 1s to 24h (1s, 15s, 1m)"
                   : "give a duration from 10ms to 24h (500ms, 2s)");
    *out = ns;
    return 0;
}

int gm_exporter_parse(int argc, char **argv, struct gm_exporter_cfg *c)
{
    memset(c, 0, sizeof *c);
    gm_metrics_opts_default(&c->m);
    snprintf(c->addr, sizeof c->addr, "%s", GM_EXPORTER_ADDR);
    c->port = GM_EXPORTER_PORT;
    c->interval_ns = 15000000000ull;
    const char *popt = NULL, *v;
    bool listen = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = gm_opt_flag("exporter", argv[i], "--once")) != 0) {
            if (r < 0)
                return 2;
            c->once = true;
        } else if ((r = gm_opt_flag("exporter", argv[i], "--dead")) != 0) {
            if (r < 0)
                return 2;
            c->m.dead = true;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i, "--listen",
                                     &v)) != 0) {
            if (r < 0 || parse_listen(v, c) != 0)
                return 2;
            listen = true;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i,
                                     "--textfile", &v)) != 0) {
            if (r < 0)
                return 2;
            if (*v == '\0')
                return bad("--textfile", v, "give a directory");
            c->textfile = v;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i,
                                     "--interval", &v)) != 0) {
            if (r < 0 || parse_duration("--interval", v, 1000000000ull,
                                        &c->interval_ns) != 0)
                return 2;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i,
                                     "--timeout", &v)) != 0) {
            if (r < 0 || parse_duration("--timeout", v, 10000000ull,
                                        &c->m.timeout_ns) != 0)
                return 2;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i, "--compat",
                                     &v)) != 0) {
            if (r < 0)
                return 2;
            if (strcmp(v, "hami") != 0)
                return bad("--compat", v, "the one accepted is hami");
            c->m.hami = true;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i, "--format",
                                     &v)) != 0) {
            if (r < 0)
                return 2;
            if (strcmp(v, "openmetrics") == 0)
                c->openmetrics = true;
            else if (strcmp(v, "prometheus") != 0)
                return bad("--format", v, "give prometheus or openmetrics");
        } else if ((r = gm_opt_value("exporter", argc, argv, &i,
                                     "--max-segments", &v)) != 0) {
            uint64_t n;
            if (r < 0)
                return 2;
            if (gm_parse_uint(v, &n) != 0 || n == 0 || n > 1000000)
                return bad("--max-segments", v, "give 1 to 1000000");
            c->m.max_segments = (unsigned)n;
        } else if ((r = gm_opt_value("exporter", argc, argv, &i, "--prefix",
                                     &popt)) != 0) {
            if (r < 0)
                return 2;
        } else {
            fprintf(stderr, "gpumem: exporter: unknown %s '%s'; %s\n",
                    argv[i][0] == '-' ? "option" : "argument", argv[i],
                    usage);
            return 2;
        }
    }
    if (listen && (c->textfile || c->once)) {
        fprintf(stderr, "gpumem: exporter: --listen serves HTTP; it does not "
                "go with --textfile or --once (%s)\n", usage);
        return 2;
    }
    if (c->textfile && c->openmetrics) {
        fprintf(stderr, "gpumem: exporter: the textfile collector reads the "
                "Prometheus format only; drop --format openmetrics\n");
        return 2;
    }
    c->m.prefix = gm_tool_prefix("exporter", popt);
    if (c->m.prefix == NULL)
        return 2;
    return 0;
}

/* ---- local modes ---------------------------------------------------------- */

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int scrape_once(const struct gm_exporter_cfg *c,
                       struct gm_metrics_totals *tot)
{
    struct gm_expo_buf b;
    char err[512];
    gm_expo_buf_init(&b, 0);
    int rc = gm_metrics_scrape(&c->m, tot, c->openmetrics
                               ? GM_EXPO_OPENMETRICS : GM_EXPO_PROM,
                               &b, NULL, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "gpumem: exporter: %s\n", err);
    int out = 0;
    if (c->textfile == NULL) {
        if (b.len && fwrite(b.p, 1, b.len, stdout) != b.len)
            out = 1;
    } else if (gm_metrics_write_file(c->textfile, GM_METRICS_FILE,
                                     b.p ? b.p : "", b.len, err,
                                     sizeof err) != 0) {
        fprintf(stderr, "gpumem: exporter: %s\n", err);
        out = 1;
    }
    gm_expo_buf_free(&b);
    return rc != 0 || out != 0;
}

int gm_exporter_run_local(const struct gm_exporter_cfg *c)
{
    struct gm_metrics_totals tot;
    memset(&tot, 0, sizeof tot);
    if (c->once || c->textfile == NULL)
        return scrape_once(c, &tot);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = 0;
    while (!stop_flag) {
        rc = scrape_once(c, &tot);
        struct timespec ts = { (time_t)(c->interval_ns / 1000000000ull),
                               (long)(c->interval_ns % 1000000000ull) };
        while (!stop_flag && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return rc;
}

/*
 * tools/exporter/server.c — gpumem-exporter, the HTTP side of `gpumem
 * exporter`: GET /metrics runs one scrape (tools/lib/metrics.h) and
 * answers it in the format the Accept header prefers. The only program of
 * the project that links libmicrohttpd. Options and manual page are those
 * of `gpumem exporter` (tools/cli/cmd_exporter.c); --once and --textfile
 * work here too.
 *
 * Invariants: one internal polling thread serves every connection, so
 * scrapes never overlap and the error counters (struct
 * gm_metrics_totals) are touched by that thread alone; at most 64
 * connections, 4 of them from one address, so that one client cannot
 * take every place; each is closed after 10 s of silence, and also when a
 * request is not whole 10 s after the connection (or the previous answer)
 * or its answer not taken within 60 s, however it trickles. The main
 * thread enforces those deadlines: it shuts down (shutdown(2)) the
 * connections past theirs once a second through its own duplicate of
 * each socket, which the polling thread makes and closes (a table under
 * a mutex), so it never touches a descriptor MHD may have closed and
 * reused. SIGINT and SIGTERM are blocked in every thread and taken by the
 * main thread with sigtimedwait, which then stops the daemon (the scrape
 * in progress finishes first).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "shim/base/clock.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/metrics.h"

#if MHD_VERSION < 0x00097002
typedef int gm_mhd_result;
#else
typedef enum MHD_Result gm_mhd_result;
#endif

#define MAX_CONNECTIONS 64u      /* at once, from every client */
#define PER_ADDRESS 4u           /* at once, from one address */
#define IDLE_S 10u               /* silence that closes a connection */
#define REQUEST_S 10u            /* to send a whole request */
#define ANSWER_S 60u             /* to take a whole answer */
#define SLOTS (2 * MAX_CONNECTIONS) /* and those MHD is still closing */

/* A connection's deadline. */
struct conn {
    bool used;
    bool shut;                   /* shut down by the main thread */
    int fd;                      /* our duplicate of its socket */
    uint64_t deadline_ns;        /* CLOCK_MONOTONIC */
};

struct server {
    struct gm_exporter_cfg cfg;
    struct gm_metrics_totals tot;
    unsigned long dir_errors;    /* messages printed about the directory */
    pthread_mutex_t mu;          /* conn[]: polling and main thread */
    struct conn conn[SLOTS];
};

static const char index_page[] =
    "gpumem exporter: the metrics are at /metrics\n";

static gm_mhd_result reply(struct MHD_Connection *c, unsigned status,
                           const char *type, void *body, size_t len,
                           enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (r == NULL) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    gm_mhd_result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- deadlines ------------------------------------------------------- */

static uint64_t after_s(unsigned s)
{
    return gm_clock_monotonic_ns() + (uint64_t)s * 1000000000u;
}

/* A new connection's slot, its deadline that of its first request; NULL
 * (and the connection shut down at once: no connection without a
 * deadline) when no slot or descriptor is left. */
static struct conn *conn_open(struct server *sv, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL)
        return NULL;
    struct conn *k = NULL;
    int fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_lock(&sv->mu);
    for (unsigned i = 0; i < SLOTS && k == NULL && fd >= 0; i++)
        if (!sv->conn[i].used)
            k = &sv->conn[i];
    if (k != NULL)
        *k = (struct conn){ true, false, fd, after_s(REQUEST_S) };
    pthread_mutex_unlock(&sv->mu);
    if (k == NULL) {
        if (fd >= 0)
            close(fd);
        shutdown(ci->connect_fd, SHUT_RDWR);
    }
    return k;
}

static void conn_close(struct server *sv, struct conn *k)
{
    if (k == NULL)
        return;
    pthread_mutex_lock(&sv->mu);
    close(k->fd);
    k->used = false;
    pthread_mutex_unlock(&sv->mu);
}

/* The connection's next deadline: s seconds from now. */
static void conn_deadline(struct server *sv, struct MHD_Connection *c,
                          unsigned s)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *k = ci ? ci->socket_context : NULL;
    if (k == NULL)
        return;
    pthread_mutex_lock(&sv->mu);
    k->deadline_ns = after_s(s);
    pthread_mutex_unlock(&sv->mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct server *sv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *ctx = conn_open(sv, c);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_close(sv, *ctx);
        *ctx = NULL;
    }
}

/* A request ended (answered, or not): the next one has REQUEST_S. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
    (void)state;
    (void)toe;
    conn_deadline(cls, c, REQUEST_S);
}

/* Main thread: shut down the connections past their deadline (MHD then
 * sees the end of the stream and closes them). */
static void expire(struct server *sv)
{
    uint64_t now = gm_clock_monotonic_ns();
    pthread_mutex_lock(&sv->mu);
    for (unsigned i = 0; i < SLOTS; i++) {
        struct conn *k = &sv->conn[i];
        if (k->used && !k->shut && now > k->deadline_ns) {
            shutdown(k->fd, SHUT_RDWR);
            k->shut = true;
        }
    }
    pthread_mutex_unlock(&sv->mu);
}

/* ---- requests ---------------------------------------------------------- */

static gm_mhd_result metrics(struct server *sv, struct MHD_Connection *c)
{
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_ACCEPT);
    enum gm_expo_fmt fmt = gm_expo_negotiate(accept);
    struct gm_expo_buf b;
    char err[512];
    gm_expo_buf_init(&b, 0);
    int rc = gm_metrics_scrape(&sv->cfg.m, &sv->tot, fmt, &b, NULL, err,
                               sizeof err);
    unsigned status = MHD_HTTP_OK;
    if (rc != 0) {
        /* Only the health figures: say why, once in a while. */
        if (sv->dir_errors++ % 100 == 0)
            fprintf(stderr, "gpumem-exporter: %s\n", err);
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (b.p == NULL)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                     (void *)"out of memory\n", 14, MHD_RESPMEM_PERSISTENT);
    return reply(c, status, gm_expo_content_type(fmt), b.p, b.len,
                 MHD_RESPMEM_MUST_FREE);
}

static gm_mhd_result handle(void *cls, struct MHD_Connection *c,
                            const char *url, const char *method,
                            const char *version, const char *upload,
                            size_t *upload_size, void **state)
{
    struct server *sv = cls;
    (void)version;
    (void)upload;
    /* First call of a request: only the headers; answer on the second,
     * once any body (ignored) has been received. */
    if (*state == NULL) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    conn_deadline(sv, c, ANSWER_S);   /* the request is whole */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                     (void *)"only GET and HEAD\n", 18,
                     MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/metrics") == 0)
        return metrics(sv, c);
    if (strcmp(url, "/") == 0)
        return reply(c, MHD_HTTP_OK, "text/plain", (void *)index_page,
                     sizeof index_page - 1, MHD_RESPMEM_PERSISTENT);
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain",
                 (void *)"not found; the metrics are at /metrics\n", 39,
                 MHD_RESPMEM_PERSISTENT);
}

#define LOG_PER_MINUTE 20u       /* libmicrohttpd's messages printed */

/* libmicrohttpd's messages (a refused or cut connection each), at most
 * LOG_PER_MINUTE in the minute from the first one, then a line that says
 * so: a client opening connections in a loop must not fill the log. */
static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t since;       /* the first message of the minute */
    static unsigned n;           /* messages since then */
    (void)cls;
    uint64_t now = gm_clock_monotonic_ns();
    pthread_mutex_lock(&mu);
    if (n == 0 || now - since >= 60000000000u) {
        since = now;
        n = 0;
    }
    if (n < LOG_PER_MINUTE) {
        fputs("gpumem-exporter: ", stderr);
        vfprintf(stderr, fmt, ap);
    } else if (n == LOG_PER_MINUTE) {
        fputs("gpumem-exporter: more messages of the HTTP library this "
              "minute are not printed\n", stderr);
    }
    if (n <= LOG_PER_MINUTE)
        n++;
    pthread_mutex_unlock(&mu);
}

static struct MHD_Daemon *start(struct server *sv)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, sv->cfg.addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)sv->cfg.port);
    } else if (inet_pton(AF_INET6, sv->cfg.addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)sv->cfg.port);
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "gpumem-exporter: --listen address '%s' is not an "
                "IPv4 or IPv6 address (a name is not resolved; give "
                "127.0.0.1, 0.0.0.0, ::1 or ::)\n", sv->cfg.addr);
        return NULL;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)sv->cfg.port, NULL, NULL, handle, sv,
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, PER_ADDRESS,
        MHD_OPTION_CONNECTION_TIMEOUT, IDLE_S,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
        MHD_OPTION_END);
    if (d == NULL)
        fprintf(stderr, "gpumem-exporter: cannot serve on %s port %u (in "
                "use, or not an address of this machine)\n", sv->cfg.addr,
                sv->cfg.port);
    return d;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(gm_help_exporter, stdout);
            return 0;
        }
    static struct server sv = { .mu = PTHREAD_MUTEX_INITIALIZER };
    int rc = gm_exporter_parse(argc, argv, &sv.cfg);
    if (rc != 0)
        return rc;
    if (sv.cfg.once || sv.cfg.textfile != NULL)
        return gm_exporter_run_local(&sv.cfg);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct MHD_Daemon *d = start(&sv);
    if (d == NULL)
        return 1;
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : sv.cfg.port;
    fprintf(stderr, "gpumem-exporter: serving http://%s%s%s:%u/metrics\n",
            strchr(sv.cfg.addr, ':') ? "[" : "", sv.cfg.addr,
            strchr(sv.cfg.addr, ':') ? "]" : "", port);
    fflush(stderr);
    sigdelset(&set, SIGPIPE);
    const struct timespec tick = { 1, 0 };
    for (;;) {
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGINT || sig == SIGTERM)
            break;
        expire(&sv);
    }
    MHD_stop_daemon(d);
    return 0;
}

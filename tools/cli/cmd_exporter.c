/*
 * tools/cli/cmd_exporter.c — `gpumem exporter`: the node's gpumem figures
 * for Prometheus. --once and --textfile run here (tools/lib/exportrun.c);
 * serving HTTP execs gpumem-exporter from the same directory as this
 * program (or from PATH), the one program that links libmicrohttpd, so
 * that neither `gpumem` nor the shim needs it. This file also holds the
 * manual page both programs print.
 *
 * Invariants: the options are checked here before anything is executed,
 * so a usage error reads the same with or without the server installed;
 * the server gets argv unchanged.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli/gpumem.h"
#include "tools/lib/metrics.h"

const char gm_help_exporter[] =
    "NAME\n"
    "    gpumem exporter - serve the node's gpumem figures to Prometheus\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem exporter [--listen ADDR:PORT] [OPTIONS]\n"
    "    gpumem exporter --textfile DIR [--interval D] [--once] [OPTIONS]\n"
    "    gpumem exporter --once [--format prometheus|openmetrics] [OPTIONS]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads every telemetry segment <prefix>.<pid> and every shared-\n"
    "    budget file <prefix>.group@<NAME> of the segment directory\n"
    "    ($GPUMEM_SHM_DIR, default /dev/shm) that it may read, afresh at\n"
    "    each scrape, and writes their figures as Prometheus metrics: per\n"
    "    process and device gpumem_used_bytes, gpumem_peak_bytes,\n"
    "    gpumem_limit_bytes, gpumem_context_bytes, the counters\n"
    "    gpumem_allocations_total, gpumem_frees_total,\n"
    "    gpumem_refused_total, gpumem_spilled_bytes_total, the ratio\n"
    "    gpumem_fragmentation_ratio and the histogram\n"
    "    gpumem_alloc_latency_seconds; per process gpumem_process_info and\n"
    "    gpumem_events_lost_total; per group and device\n"
    "    gpumem_group_used_bytes, _limit_bytes, _peak_bytes and\n"
    "    gpumem_group_members; per physical card (label uuid, the UUID\n"
    "    the processes recorded; device, the ordinal, where none was)\n"
    "    gpumem_device_physical_bytes, gpumem_device_used_bytes and\n"
    "    gpumem_device_processes (sums over live processes); and its\n"
    "    own health: gpumem_scrape_segments, gpumem_scrape_errors_total\n"
    "    (by reason) and gpumem_scrape_duration_seconds. Series carry the\n"
    "    labels pid (the host pid for a container's process), command\n"
    "    (program base name and arguments, 64 bytes at most), mode, user\n"
    "    (SLURM_JOB_USER, else the owner), device (the CUDA ordinal the\n"
    "    process sees), group for a member of a shared budget, and the\n"
    "    job identity the process recorded: job and step (Slurm), and\n"
    "    namespace, pod and container (Kubernetes). docs/metrics.md\n"
    "    defines every metric. Processes that died without closing their\n"
    "    segment are left out (see --dead); processes that exited with\n"
    "    GPUMEM_KEEP=1 are kept with their final figures.\n"
    "\n"
    "    A scrape is bounded: at most --max-segments segments, --timeout of\n"
    "    reading, 64 MiB of text. A segment that cannot be read (another\n"
    "    user's, not a gpumem segment, half-written, truncated while read,\n"
    "    never consistent, a copy under another pid's name) is skipped\n"
    "    and counted in gpumem_scrape_errors_total; it never stops the\n"
    "    scrape. No label set is written twice: a process whose labels\n"
    "    equal those of one already exported by the scrape is skipped\n"
    "    (reason \"duplicate\").\n"
    "\n"
    "    Without --once or --textfile it serves HTTP: GET /metrics answers\n"
    "    in the Prometheus text format 0.0.4, or in OpenMetrics 1.0.0 when\n"
    "    the Accept header prefers application/openmetrics-text (as\n"
    "    Prometheus does); GET / says where the metrics are. The server is\n"
    "    the program gpumem-exporter (built when libmicrohttpd is\n"
    "    installed); scrapes are served one at a time, 64 connections at\n"
    "    most and 4 from one address (more are closed at once), each\n"
    "    closed after 10 s of silence, when its request is not whole 10 s\n"
    "    after it connected (or after the previous answer), or when the\n"
    "    answer is not taken within 60 s: a slow client cannot keep a\n"
    "    scraper out. SIGINT or SIGTERM stops it.\n"
    "\n"
    "OPTIONS\n"
    "    --listen ADDR:PORT\n"
    "        Address to serve on: ADDR:PORT, [IPV6]:PORT or :PORT (default\n"
    "        127.0.0.1:9455; 9455 is not used by the DCGM exporter, 9400,\n"
    "        nor by HAMi's monitors, 9394 and 9395; port 0 takes any free\n"
    "        port and prints it at start). Listening on all\n"
    "        interfaces (0.0.0.0) shows command lines and job names to\n"
    "        whoever can reach the port.\n"
    "    --textfile DIR\n"
    "        Instead of serving, write DIR/gpumem.prom for node_exporter's\n"
    "        textfile collector, replaced atomically (a temporary file and\n"
    "        rename) every --interval until SIGINT or SIGTERM.\n"
    "    --interval D\n"
    "        Time between two writes of --textfile (default 15s; 1s to\n"
    "        24h).\n"
    "    --once\n"
    "        Scrape once: to standard output, or with --textfile into the\n"
    "        file, then exit.\n"
    "    --format prometheus|openmetrics\n"
    "        The format of --once on standard output (default prometheus).\n"
    "    --compat hami\n"
    "        Also write hami_vgpu_memory_used_bytes and\n"
    "        hami_vgpu_memory_limit_bytes with the labels of HAMi's vGPU\n"
    "        monitor (namespace, pod, container, vdevice_index,\n"
    "        device_uuid, zone=\"vGPU\"), one series per container and\n"
    "        device, so dashboards built for HAMi keep working.\n"
    "    --prefix P\n"
    "        Read segments named P.<pid> (default: $GPUMEM_SHM_PREFIX, else\n"
    "        gpumem).\n"
    "    --dead\n"
    "        Also export processes that died without closing their\n"
    "        segment (their figures are those at death; they are never in\n"
    "        the per-card sums).\n"
    "    --max-segments N\n"
    "        Read at most N process segments per scrape (default 4096):\n"
    "        when there are more, live processes take the places first,\n"
    "        then kept ones, then (with --dead) dead ones, each by pid,\n"
    "        told apart by a look at each segment's header and lock (at\n"
    "        most 16 N segments). Those left out that would have been\n"
    "        exported, and any past 16 N, count as errors with reason\n"
    "        \"limit\".\n"
    "    --timeout D\n"
    "        Stop reading segments after D (default 5s); the rest count as\n"
    "        errors with reason \"timeout\".\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Stopped by a signal, or --once written.\n"
    "    1   The segment directory or the text file could not be read or\n"
    "        written, the address could not be bound, or gpumem-exporter\n"
    "        is not installed.\n"
    "    2   Unknown option or bad value.\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem exporter\n"
    "        curl -s 127.0.0.1:9455/metrics | grep gpumem_used_bytes\n"
    "    gpumem exporter --listen 0.0.0.0:9455 --compat hami\n"
    "    gpumem exporter --textfile /var/lib/node_exporter/textfile "
    "--interval 15s\n"
    "    gpumem exporter --once | promtool check metrics\n";

/* The server program: next to this one, else from PATH. */
static int exec_server(char **argv)
{
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(path, sizeof path, "%s/gpumem-exporter", self);
            argv[0] = path;
            execv(path, argv);
        }
    }
    argv[0] = "gpumem-exporter";
    execvp("gpumem-exporter", argv);
    fprintf(stderr, "gpumem: exporter: cannot run gpumem-exporter (%s): "
            "serving HTTP needs it, built when libmicrohttpd is installed "
            "(Debian: apt-get install libmicrohttpd-dev, then make); "
            "--once and --textfile work without it\n", strerror(errno));
    return 1;
}

int gm_cmd_exporter(int argc, char **argv)
{
    struct gm_exporter_cfg cfg;
    int rc = gm_exporter_parse(argc, argv, &cfg);
    if (rc != 0)
        return rc;
    if (cfg.once || cfg.textfile != NULL)
        return gm_exporter_run_local(&cfg);
    return exec_server(argv);
}

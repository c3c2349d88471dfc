/*
 * tools/cli/logfrom.c — `gpumem log --from FILE`: print the records of a
 * recording (gpumem record, docs/trace.md) or a text trace, one line per
 * driver call, in the formats of gpumem log, with one "lost" line where
 * the writer could not store records and one line per process that did
 * not close its section.
 *
 * Invariant: every record of the file is printed once, in file order; a
 * PID asked for that has no section in the file is said, and the exit
 * status is then 1 (as gpumem replay --pid).
 */
#include <stdio.h>
#include <string.h>

#include "tools/cli/gpumem.h"
#include "tools/lib/trace.h"

static bool wanted(const int *pids, size_t np, uint32_t pid)
{
    if (np == 0)
        return true;
    for (size_t i = 0; i < np; i++)
        if ((uint32_t)pids[i] == pid)
            return true;
    return false;
}

/* Each PID asked for that the file has no section of: said; 1 if any. */
static int say_missing(const char *file, const struct gm_trace *t,
                       const int *pids, size_t np)
{
    int rc = 0;
    for (size_t i = 0; i < np; i++) {
        size_t k = 0;
        while (k < t->nproc && t->proc[k].pid != (uint32_t)pids[i])
            k++;
        if (k < t->nproc)
            continue;
        fprintf(stderr, "gpumem: log: %s holds no process %d\n", file,
                pids[i]);
        rc = 1;
    }
    return rc;
}

int gm_log_from(const char *file, int fmt, const int *pids, size_t np)
{
    struct gm_trace t;
    char err[512];
    if (gm_trace_load(file, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem: log: %s: %s\n", file, err);
        return 1;
    }
    if (fmt == 2)
        printf("pid,seq,t_ns,op,dev,tid,size,addr,aux,aux2,rc\n");
    for (size_t pi = 0; pi < t.nproc; pi++) {
        const struct gm_tproc *p = &t.proc[pi];
        if (!wanted(pids, np, p->pid))
            continue;
        if (fmt == 1)
            printf("{\"pid\":%u,\"kind\":\"process\",\"ppid\":%u,"
                   "\"start_realtime_ns\":%llu,\"records\":%zu,"
                   "\"closed\":%s,\"lost\":%llu}\n", p->pid, p->ppid,
                   (unsigned long long)p->start_ns, p->count,
                   p->closed ? "true" : "false",
                   (unsigned long long)p->lost);
        else if (fmt == 0 && !p->closed && !t.text)
            printf("pid %u: the process did not close its recording "
                   "(crashed, killed or exec'd): %zu records kept\n",
                   p->pid, p->count);
        for (size_t i = 0; i < p->count; i++) {
            const struct gm_tev *e = &t.ev[p->first + i];
            const char *op = gm_rec_op_name(e->op);
            if (e->op == GM_RO_LOST) {
                if (fmt == 1)
                    printf("{\"pid\":%u,\"kind\":\"lost\",\"count\":%llu,"
                           "\"from_seq\":%llu}\n", p->pid,
                           (unsigned long long)e->size,
                           (unsigned long long)e->addr);
                else if (fmt == 2)
                    printf("%u,%llu,%llu,lost,,,%llu,,,,\n", p->pid,
                           (unsigned long long)e->seq,
                           (unsigned long long)e->t_ns,
                           (unsigned long long)e->size);
                else
                    printf("pid %u: lost %llu record%s (from record "
                           "%llu)\n", p->pid, (unsigned long long)e->size,
                           e->size == 1 ? "" : "s",
                           (unsigned long long)e->addr);
                continue;
            }
            if (fmt == 1)
                printf("{\"pid\":%u,\"seq\":%llu,\"t_ns\":%llu,\"op\":\"%s\","
                       "\"dev\":%u,\"tid\":%u,\"size\":%llu,\"addr\":%llu,"
                       "\"aux\":%llu,\"aux2\":%llu,\"rc\":%u}\n", p->pid,
                       (unsigned long long)e->seq,
                       (unsigned long long)e->t_ns, op, e->dev, e->tid,
                       (unsigned long long)e->size,
                       (unsigned long long)e->addr,
                       (unsigned long long)e->aux,
                       (unsigned long long)e->aux2, e->rc);
            else if (fmt == 2)
                printf("%u,%llu,%llu,%s,%u,%u,%llu,%llu,%llu,%llu,%u\n",
                       p->pid, (unsigned long long)e->seq,
                       (unsigned long long)e->t_ns, op, e->dev, e->tid,
                       (unsigned long long)e->size,
                       (unsigned long long)e->addr,
                       (unsigned long long)e->aux,
                       (unsigned long long)e->aux2, e->rc);
            else
                printf("%12.6f %7u %3d %-13s %12llu 0x%-14llx rc %-3u tid "
                       "%u\n", e->t_ns / 1e9, p->pid,
                       e->dev == 255 ? -1 : e->dev, op,
                       (unsigned long long)e->size,
                       (unsigned long long)e->addr, e->rc, e->tid);
        }
        if (p->lost && fmt == 0)
            printf("pid %u: %llu record%s lost in all, the first at "
                   "record %llu\n", p->pid, (unsigned long long)p->lost,
                   p->lost == 1 ? "" : "s",
                   (unsigned long long)p->first_lost);
    }
    int rc = say_missing(file, &t, pids, np);
    gm_trace_free(&t);
    return rc;
}

/*
 * tests/bench/kids.h — the child processes a benchmark reads segments of:
 * gm_kids_start forks n of them, each running child(fd, parent, i), which
 * writes 'K' to fd once its segment is made and never returns; it returns
 * how many said so. The pids go to kids[0 .. *nkids). A child first
 * calls gm_kid_detach(parent, &set): the terminal's signals blocked (set:
 * them, to wait for), SIGTERM when the benchmark dies, out at once if it
 * died already.
 */
#ifndef GM_BENCH_KIDS_H
#define GM_BENCH_KIDS_H

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

typedef void (*gm_kid_main)(int fd, pid_t parent, int i);

static inline void gm_kid_detach(pid_t parent, sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigprocmask(SIG_BLOCK, set, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(0);
}

static inline int gm_kids_start(pid_t *kids, int *nkids, int n,
                                gm_kid_main child)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return 0;
    fflush(stdout);
    fflush(stderr);
    pid_t self = getpid();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            close(pfd[0]);
            child(pfd[1], self, i);
            _exit(0);
        }
        kids[(*nkids)++] = pid;
    }
    close(pfd[1]);
    int ok = 0;
    char c;
    for (int i = 0; i < *nkids && read(pfd[0], &c, 1) == 1; i++)
        ok += c == 'K';
    close(pfd[0]);
    return ok;
}

#endif

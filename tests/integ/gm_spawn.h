/*
 * tests/integ/gm_spawn.h — running a program under the shim for the
 * integration suites: fork, set the environment in the child, exec,
 * capture stdout+stderr, return the exit status (128+N for a signal).
 *
 * Header-only (static functions): each suite includes it once.
 */
#ifndef GM_SPAWN_H
#define GM_SPAWN_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *gm_build_dir(void)
{
    const char *b = getenv("BUILD");
    return b && *b ? b : "build";
}

/* Path under the build directory (static buffer rotation of 8). */
__attribute__((unused)) static const char *gm_bpath(const char *rel)
{
    static char bufs[8][1024];
    static int n;
    char *b = bufs[n++ % 8];
    snprintf(b, 1024, "%s/%s", gm_build_dir(), rel);
    return b;
}

/* env: NULL-terminated "NAME=VALUE" strings set in the child (a value-less
 * "NAME" unsets it); preload: also set LD_PRELOAD to the shim and
 * LD_LIBRARY_PATH to the simulated driver. */
__attribute__((unused)) static int gm_run(const char *const *env, int preload,
                  const char *const *argv, char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        char abs[2048];
        if (realpath(gm_build_dir(), abs) == NULL)
            _exit(126);
        char lib[2200], sim[2200];
        snprintf(lib, sizeof lib, "%s/libgpumem.so", abs);
        snprintf(sim, sizeof sim, "%s/sim", abs);
        setenv("LD_LIBRARY_PATH", sim, 1);
        if (preload)
            setenv("LD_PRELOAD", lib, 1);
        else
            unsetenv("LD_PRELOAD");
        for (const char *const *e = env; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            if (eq == NULL) {
                unsetenv(*e);
                continue;
            }
            char name[256];
            size_t n = (size_t)(eq - *e) < sizeof name - 1
                           ? (size_t)(eq - *e) : sizeof name - 1;
            memcpy(name, *e, n);
            name[n] = '\0';
            setenv(name, eq + 1, 1);
        }
        execv(argv[0], (char *const *)argv);
        perror(argv[0]);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    for (;;) {
        char tmp[4096];
        ssize_t r = read(fd[0], tmp, sizeof tmp);
        if (r <= 0)
            break;
        size_t k = (size_t)r;
        if (out && len + 1 < cap) {
            size_t m = k < cap - 1 - len ? k : cap - 1 - len;
            memcpy(out + len, tmp, m);
            len += m;
        }
    }
    if (out)
        out[len] = '\0';
    close(fd[0]);
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

#endif

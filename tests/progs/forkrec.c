/*
 * tests/progs/forkrec.c — a program that forks between allocations, for
 * the recording test: the parent allocates A buffers, forks; the child
 * (a fresh CUDA user, as after any fork) allocates and frees C buffers
 * on two threads and exits; the parent frees its A after the child is
 * gone. Usage: forkrec A C [kill|slow|exec]: with "kill" the parent
 * kills itself (SIGKILL) after its A allocations, before forking, so its
 * recording is never closed; with "exec" it executes "forkrec 3 0" in
 * its place at that point; with "slow" the child waits 300 ms before its
 * allocations and the parent 300 ms after the child's exit before its
 * frees (the child's calls fall well inside the parent's hold). Exit 0
 * when every call succeeded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*init_fn)(unsigned);
typedef int (*dev_fn)(int *, int);
typedef int (*ctx_fn)(void **, int);
typedef int (*set_fn)(void *);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static alloc_fn m_alloc;
static free_fn m_free;
static set_fn c_set;
static void *ctx;
static int per_thread;

static int setup(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL)
        return -1;
    init_fn i = (init_fn)dlsym(h, "cuInit");
    dev_fn d = (dev_fn)dlsym(h, "cuDeviceGet");
    ctx_fn c = (ctx_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    c_set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    m_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    m_free = (free_fn)dlsym(h, "cuMemFree_v2");
    int dev;
    if (!i || !d || !c || !c_set || !m_alloc || !m_free || i(0) || d(&dev, 0) ||
        c(&ctx, dev) || c_set(ctx))
        return -1;
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    c_set(ctx);
    for (int k = 0; k < per_thread; k++) {
        unsigned long long p;
        if (m_alloc(&p, 1 << 20) || m_free(p))
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4)
        return 2;
    int a = atoi(argv[1]), c = atoi(argv[2]);
    if (setup() != 0)
        return 1;
    unsigned long long *keep = calloc((size_t)a, sizeof *keep);
    for (int k = 0; k < a; k++)
        if (m_alloc(&keep[k], 2 << 20))
            return 3;
    if (argc == 4 && strcmp(argv[3], "kill") == 0)
        raise(SIGKILL);
    if (argc == 4 && strcmp(argv[3], "exec") == 0) {
        execl(argv[0], argv[0], "3", "0", (char *)NULL);
        return 5;
    }
    fflush(NULL);
    pid_t ch = fork();
    if (ch == 0) {
        if (setup() != 0)
            _exit(1);
        if (argc == 4 && strcmp(argv[3], "slow") == 0)
            usleep(300000);
        per_thread = c / 2;
        pthread_t t[2];
        void *r0, *r1;
        pthread_create(&t[0], NULL, worker, NULL);
        pthread_create(&t[1], NULL, worker, NULL);
        pthread_join(t[0], &r0);
        pthread_join(t[1], &r1);
        exit(r0 || r1 ? 3 : 0);
    }
    int st;
    waitpid(ch, &st, 0);
    if (argc == 4 && strcmp(argv[3], "slow") == 0)
        usleep(300000);
    for (int k = 0; k < a; k++)
        if (m_free(keep[k]))
            return 3;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

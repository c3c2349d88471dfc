/*
 * tools/sim/simmachine.c — the simulated machine: configuration of the
 * physical devices, their UUIDs, and the per-process board files
 * (simmachine.h has the invariants).
 */
#include "tools/sim/simmachine.h"

#include "policy/parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOARD_DIR "/dev/shm"

static int bad(const char *var, const char *val, const char *what)
{
    fprintf(stderr, "simcuda: %s='%s' %s\n", var, val, what);
    return -1;
}

/* "80G" or "80G,40G": fills sizes[], returns the count or -1. */
static int load_memory(const char *v, uint64_t *sizes)
{
    static const char *const what =
        "is not a size; use bytes or a number with K/M/G/T (binary units), e.g. 80G, "
        "or a comma list of them, one per device (80G,40G)";
    char item[64];
    int n = 0;
    const char *p = v;

    for (;;) {
        size_t len = strcspn(p, ",");
        uint64_t b;
        if (len == 0 || len >= sizeof item || n == GM_SIM_MAX_PHYS)
            return bad("SIMCUDA_MEMORY", v, what);
        memcpy(item, p, len);
        item[len] = '\0';
        if (gm_parse_size(item, &b) != 0 || b == 0)
            return bad("SIMCUDA_MEMORY", v, what);
        sizes[n++] = b;
        if (p[len] == '\0')
            return n;
        p += len + 1;
    }
}

static bool board_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > GM_SIM_BOARD_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

int gm_sim_machine_load(struct gm_sim_machine *m)
{
    const char *v;
    uint64_t sizes[GM_SIM_MAX_PHYS];
    int nsizes = 0, rc = 0;
    bool ndev_set = false;

    memset(m, 0, sizeof *m);
    m->ndev = 1;
    snprintf(m->board, sizeof m->board, "simcuda");
    if ((v = getenv("SIMCUDA_DEVICES")) != NULL) {
        uint64_t n;
        if (gm_parse_uint(v, &n) != 0 || n > GM_SIM_MAX_PHYS)
            rc = bad("SIMCUDA_DEVICES", v,
                     "is not a device count; use a whole number from 0 to 16");
        else
            m->ndev = (int)n;
        ndev_set = true;
    }
    if ((v = getenv("SIMCUDA_MEMORY")) != NULL) {
        nsizes = load_memory(v, sizes);
        if (nsizes < 0) {
            rc = -1;
            nsizes = 0;
        } else if (!ndev_set) {
            m->ndev = nsizes;
        } else if (nsizes > m->ndev) {
            rc = bad("SIMCUDA_MEMORY", v,
                     "lists more sizes than SIMCUDA_DEVICES has devices");
        }
    }
    for (int i = 0; i < GM_SIM_MAX_PHYS; i++)
        m->memory[i] = nsizes > 0 ? sizes[i < nsizes ? i : nsizes - 1] : 80ULL << 30;
    if ((v = getenv("SIMCUDA_UUID_SEED")) != NULL && gm_parse_uint(v, &m->uuid_seed) != 0)
        rc = bad("SIMCUDA_UUID_SEED", v, "is not a seed; use a whole number");
    if ((v = getenv("SIMCUDA_SHM")) != NULL) {
        if (board_name_ok(v))
            snprintf(m->board, sizeof m->board, "%s", v);
        else
            rc = bad("SIMCUDA_SHM", v, "is not a board name; use 1 to 32 characters "
                     "from A-Z a-z 0-9 _ . -");
    }
    return rc;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void gm_sim_uuid(const struct gm_sim_machine *m, int phys, unsigned char out[16])
{
    uint64_t a = mix64(m->uuid_seed * 131 + (uint64_t)phys * 2 + 1);
    uint64_t b = mix64(a ^ 0x6770756d656d0000ULL);  /* "gpumem" */
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(a >> (8 * i));
        out[8 + i] = (unsigned char)(b >> (8 * i));
    }
}

void gm_sim_uuid_string(const unsigned char b[16], char *out, size_t cap)
{
    snprintf(out, cap,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* ---- the board ------------------------------------------------------- */

static struct gm_sim_board *board;
static char board_path[sizeof BOARD_DIR + GM_SIM_BOARD_MAX + 24];

bool gm_sim_board_open(const struct gm_sim_machine *m)
{
    int pid = (int)getpid();
    snprintf(board_path, sizeof board_path, BOARD_DIR "/%s.%d", m->board, pid);
    (void)unlink(board_path); /* a stale board of an earlier process with this pid */
    int fd = open(board_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "simcuda: cannot create %s (%s); other processes' "
                "NVML will not see this one\n", board_path, strerror(errno));
        return false;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)sizeof *board) == 0)
        p = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "simcuda: cannot map %s (%s)\n", board_path, strerror(errno));
        (void)unlink(board_path);
        return false;
    }
    board = p;
    board->version = GM_SIM_BOARD_VERSION;
    board->pid = pid;
    /* Readers check the magic first: it is written last. */
    __atomic_store_n(&board->magic, GM_SIM_BOARD_MAGIC, __ATOMIC_RELEASE);
    return true;
}

void gm_sim_board_close(void)
{
    if (board == NULL)
        return;
    if (board->pid == (int)getpid())
        (void)unlink(board_path);
    munmap(board, sizeof *board);
    board = NULL;
}

void gm_sim_board_set(int phys, uint64_t used, uint32_t contexts)
{
    struct gm_sim_board *b = board;
    if (b == NULL || phys < 0 || phys >= GM_SIM_MAX_PHYS)
        return;
    atomic_store_explicit(&b->used[phys], used, memory_order_relaxed);
    atomic_store_explicit(&b->contexts[phys], contexts, memory_order_relaxed);
}

static bool alive(int pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Reads one board file; 1 live, 0 not a live board (a dead one is removed). */
static int read_board(const char *path, int pid, struct gm_sim_proc *out)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size == (off_t)sizeof(struct gm_sim_board))
        p = mmap(NULL, sizeof(struct gm_sim_board), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    struct gm_sim_board *b = p;
    int r = 0;
    /* Pairs with the release store of the magic in gm_sim_board_open. */
    if (__atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == GM_SIM_BOARD_MAGIC &&
        b->version == GM_SIM_BOARD_VERSION && b->pid == pid) {
        if (alive(pid)) {
            out->pid = pid;
            for (int i = 0; i < GM_SIM_MAX_PHYS; i++) {
                out->used[i] = atomic_load_explicit(&b->used[i], memory_order_relaxed);
                out->contexts[i] = atomic_load_explicit(&b->contexts[i], memory_order_relaxed);
            }
            r = 1;
        } else {
            (void)unlink(path);
        }
    }
    munmap(p, sizeof(struct gm_sim_board));
    return r;
}

int gm_sim_board_scan(const char *prefix,
                      void (*fn)(const struct gm_sim_proc *p, void *arg),
                      void *arg)
{
    DIR *dir = opendir(BOARD_DIR);
    if (dir == NULL)
        return -1;
    size_t plen = strlen(prefix);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, prefix, plen) != 0 || s[plen] != '.')
            continue;
        char *end;
        long pid = strtol(s + plen + 1, &end, 10);
        if (*end != '\0' || end == s + plen + 1 || pid <= 0 || pid > 0x7fffffff)
            continue;
        char path[sizeof BOARD_DIR + 300];
        snprintf(path, sizeof path, BOARD_DIR "/%s", s);
        struct gm_sim_proc p;
        if (read_board(path, (int)pid, &p)) {
            fn(&p, arg);
            n++;
        }
    }
    closedir(dir);
    return n;
}

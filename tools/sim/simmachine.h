/*
 * tools/sim/simmachine.h — the simulated machine that the simulated driver
 * (libcuda.so.1) and the simulated NVML (libnvidia-ml.so.1) both describe:
 * its physical devices (count, memory, UUIDs) and the board, one small
 * shared file per simulated process, through which every process's device
 * memory is visible to the others (as a real driver's is to NVML).
 *
 * No CUDA types: the simulated NVML includes this without cuda.h.
 * Invariants: a physical device's UUID is a fixed function of its index
 * and SIMCUDA_UUID_SEED; a board is written only by the process whose pid
 * it carries (atomic stores of whole 64/32-bit figures, relaxed: readers
 * want a recent figure, not an order between figures), and readers
 * validate magic, version, size and pid before trusting it.
 */
#ifndef GM_SIMMACHINE_H
#define GM_SIMMACHINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GM_SIM_MAX_PHYS 16
#define GM_SIM_BOARD_MAX 32     /* SIMCUDA_SHM: [A-Za-z0-9_.-]{1,32} */

struct gm_sim_machine {
    int ndev;                               /* physical devices */
    uint64_t memory[GM_SIM_MAX_PHYS];       /* bytes per physical device */
    uint64_t uuid_seed;
    char board[GM_SIM_BOARD_MAX + 1];       /* board file prefix */
};

/* Reads SIMCUDA_DEVICES, SIMCUDA_MEMORY, SIMCUDA_UUID_SEED and
 * SIMCUDA_SHM (defaults: 1 device of 80 GiB, seed 0, "simcuda"). A bad
 * value prints "simcuda: NAME='VALUE' ..." and makes the result -1 (the
 * other fields keep valid values). */
int gm_sim_machine_load(struct gm_sim_machine *m);

/* Physical device `phys`'s UUID bytes, and as "GPU-xxxxxxxx-...". */
void gm_sim_uuid(const struct gm_sim_machine *m, int phys, unsigned char out[16]);
void gm_sim_uuid_string(const unsigned char b[16], char *out, size_t cap);

/* ---- the board ------------------------------------------------------- */

#define GM_SIM_BOARD_MAGIC 0x6472616f426d6953ULL /* "SimBoard" */
#define GM_SIM_BOARD_VERSION 1u

/* /dev/shm/<prefix>.<pid>, mode 0600. */
struct gm_sim_board {
    uint64_t magic;
    uint32_t version;
    int32_t pid;
    _Atomic uint64_t used[GM_SIM_MAX_PHYS];     /* bytes charged, by physical index */
    _Atomic uint32_t contexts[GM_SIM_MAX_PHYS]; /* live contexts */
};

/* Creates this process's board (replacing a stale one of the same pid);
 * false, with one "simcuda: ..." line, when it cannot. */
bool gm_sim_board_open(const struct gm_sim_machine *m);
/* Removes this process's board (at exit; in a fork child it is another
 * file: open a new one). */
void gm_sim_board_close(void);
/* Publishes one physical device's figures; no-op without a board. */
void gm_sim_board_set(int phys, uint64_t used, uint32_t contexts);

/* One live process as the board shows it. */
struct gm_sim_proc {
    int pid;
    uint64_t used[GM_SIM_MAX_PHYS];
    uint32_t contexts[GM_SIM_MAX_PHYS];
};
/* Calls fn for each board under `prefix` whose process is alive (the
 * boards of dead processes are removed); returns how many it saw, or -1
 * when /dev/shm cannot be read. */
int gm_sim_board_scan(const char *prefix,
                      void (*fn)(const struct gm_sim_proc *p, void *arg),
                      void *arg);

#endif

/*
 * tools/sim/simcuda_reg.c — the simulated driver's handle registry: which
 * opaque handles (contexts, streams, pools, arrays, VMM handles) are alive,
 * so a bad handle is refused instead of dereferenced.
 *
 * An open-addressing hash table (linear probing, backward-shift deletion)
 * keyed by (kind, handle value), under one leaf spinlock. Invariants: a
 * (kind, key) pair appears at most once; the table is never more than half
 * full; an entry's device never changes while it is registered.
 */
#include "tools/sim/simcuda.h"

#include "shim/base/spin.h"

#include <stdlib.h>

struct reg_ent {
    uint64_t key;
    int kind;           /* 0: empty slot */
    int dev;
    void *obj;
};

/* A spinlock: lookups hold it for a few dozen instructions. */
static gm_spin reg_lock;
static struct reg_ent *reg_tab;
static size_t reg_cap, reg_n;   /* reg_cap is a power of two */

static size_t reg_hash(int kind, uint64_t key)
{
    uint64_t h = (key ^ ((uint64_t)kind << 58)) * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h ^ (h >> 32));
}

static size_t reg_slot(int kind, uint64_t key)
{
    size_t i = reg_hash(kind, key) & (reg_cap - 1);
    while (reg_tab[i].kind != 0 && !(reg_tab[i].kind == kind && reg_tab[i].key == key))
        i = (i + 1) & (reg_cap - 1);
    return i;
}

static bool reg_grow(void)
{
    size_t cap = reg_cap ? reg_cap * 2 : 256;
    struct reg_ent *old = reg_tab;
    size_t oldcap = reg_cap;
    struct reg_ent *tab = calloc(cap, sizeof *tab);
    if (tab == NULL)
        return false;
    reg_tab = tab;
    reg_cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].kind != 0)
            reg_tab[reg_slot(old[i].kind, old[i].key)] = old[i];
    free(old);
    return true;
}

int gm_sim_reg_add(int kind, uint64_t key, int dev, void *obj)
{
    int rc = -1;
    gm_spin_lock(&reg_lock);
    if ((reg_n + 1) * 2 <= reg_cap || reg_grow()) {
        size_t i = reg_slot(kind, key);
        if (reg_tab[i].kind == 0)
            reg_n++;
        reg_tab[i] = (struct reg_ent){ key, kind, dev, obj };
        rc = 0;
    }
    gm_spin_unlock(&reg_lock);
    return rc;
}

void *gm_sim_reg_find(int kind, uint64_t key, int *dev)
{
    void *obj = NULL;
    gm_spin_lock(&reg_lock);
    if (reg_cap != 0) {
        size_t i = reg_slot(kind, key);
        if (reg_tab[i].kind != 0) {
            obj = reg_tab[i].obj;
            if (dev != NULL)
                *dev = reg_tab[i].dev;
        }
    }
    gm_spin_unlock(&reg_lock);
    return obj;
}

bool gm_sim_reg_with(int kind, uint64_t key, void (*fn)(void *obj, void *arg),
                     void *arg)
{
    bool found = false;
    gm_spin_lock(&reg_lock);
    if (reg_cap != 0) {
        size_t i = reg_slot(kind, key);
        if (reg_tab[i].kind != 0) {
            fn(reg_tab[i].obj, arg);
            found = true;
        }
    }
    gm_spin_unlock(&reg_lock);
    return found;
}

void gm_sim_reg_del(int kind, uint64_t key)
{
    gm_spin_lock(&reg_lock);
    if (reg_cap != 0) {
        size_t i = reg_slot(kind, key);
        if (reg_tab[i].kind != 0) {
            /* Backward-shift: move later entries of the probe run into the
             * hole when their home slot does not lie after the hole. */
            size_t hole = i, j = i;
            for (;;) {
                j = (j + 1) & (reg_cap - 1);
                if (reg_tab[j].kind == 0)
                    break;
                size_t home = reg_hash(reg_tab[j].kind, reg_tab[j].key) & (reg_cap - 1);
                if (((j - home) & (reg_cap - 1)) >= ((j - hole) & (reg_cap - 1))) {
                    reg_tab[hole] = reg_tab[j];
                    hole = j;
                }
            }
            reg_tab[hole].kind = 0;
            reg_n--;
        }
    }
    gm_spin_unlock(&reg_lock);
}

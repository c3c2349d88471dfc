/*
 * tests/fuzz/fuzz_admin.c — libFuzzer target for the admin policy file's
 * lines and HAMi-core's variables (`make fuzz`). The input up to its
 * first 0xff byte is the file's text (NUL bytes made newlines); the rest,
 * split at 0xfe bytes, is the environment (the first entries are fixed so
 * the rules meet an environment that tries to lift them). The load must
 * neither crash nor hang, must never report success with a bad file, and
 * must keep every limit at or under the file's ceiling.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gm_admin_file af;
static struct gm_policy p;
static struct gm_diag d;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char envbuf[4096];
    char *envp[40] = { "GPUMEM_LIMIT=none", "SLURM_JOB_ID=7", NULL };
    size_t i, n = 0, e = 2, o = 0;

    memset(&af, 0, sizeof af);
    af.state = GM_ADMIN_READ;
    strcpy(af.path, "/etc/gpumem/policy");
    for (i = 0; i < size && data[i] != 0xff && n < GM_ADMIN_TEXT_MAX; i++)
        af.text[n++] = data[i] == 0 ? '\n' : (char)data[i];
    af.text[n] = '\0';
    af.len = n;
    if (i < size)
        i++;
    envp[e] = envbuf;
    for (; i < size && o + 1 < sizeof envbuf && e < 38; i++) {
        if (data[i] == 0xfe || data[i] == 0) {
            envbuf[o++] = '\0';
            envp[++e] = envbuf + o;
            continue;
        }
        envbuf[o++] = (char)data[i];
    }
    envbuf[o] = '\0';
    envp[e + 1] = NULL;
    int rc = gm_policy_load_ex(&p, envp, &af, &d);
    if (rc == 0 && p.admin_fatal)
        abort();
    if (rc == 0 && !p.disabled && p.admin.max_limit.kind == GM_LIMIT_BYTES) {
        uint64_t max = p.admin.max_limit.bytes;
        for (unsigned dev = 0; dev < 4; dev++) {
            uint64_t l = gm_policy_limit_for(&p, dev, 80ull << 30);
            if (l == 0 || l > max)
                abort();
        }
    }
    return 0;
}

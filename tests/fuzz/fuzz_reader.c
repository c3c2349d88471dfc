/*
 * tests/fuzz/fuzz_reader.c — libFuzzer target for the segment reader
 * (`make fuzz`). An input whose first byte is odd is a raw segment image;
 * otherwise it patches a valid image (small ring, two device blocks, a few
 * events): bytes 1-2 optionally truncate it, then each 10-byte group
 * stores 8 bytes at a 16-bit offset. Either way the image goes through
 * gm_reader_check_bytes(), the entry point `make check` also hammers
 * (tests/unit/test_tel_fuzz.c). The reader must neither crash nor hang.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char *tmpl;
static size_t tmpl_len;

static void make_template(void)
{
    struct gm_tel_params p = { .ring_events = 16, .dev_slots = 2,
                               .policy_summary = "limit=1.0GiB" };
    tmpl_len = gm_tel_layout_size(16, 2);
    tmpl = aligned_alloc(64, tmpl_len);
    struct gm_tel t;
    if (tmpl == NULL || gm_tel_open_mem(&t, tmpl, tmpl_len, &p) != 0)
        abort();
    gm_tel_device(&t, 0, 1ull << 34, 1ull << 30, NULL);
    for (uint64_t i = 0; i < 20; i++)
        gm_tel_alloc(&t, (unsigned)(i & 1), 1, 0x1000 * i, 4096 << (i % 9),
                     1000 * i, 4096 * i, 4096 * i);
    gm_tel_frag(&t, 0, 12345);
    gm_tel_refuse(&t, 1, 1, 1ull << 31, 4096, 1ull << 30, 0);
    gm_tel_host(&t, 16, 0xabc, -4096);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (tmpl == NULL)
        make_template();
    if (size == 0)
        return 0;
    if (data[0] & 1) {
        gm_reader_check_bytes(data + 1, size - 1);
        return 0;
    }
    unsigned char *img = malloc(tmpl_len);
    if (img == NULL)
        return 0;
    memcpy(img, tmpl, tmpl_len);
    size_t len = tmpl_len, i = 1;
    if (size >= 3) {
        size_t cut = (size_t)data[1] | (size_t)data[2] << 8;
        if (data[0] & 2)
            len = cut % (tmpl_len + 1);
        i = 3;
    }
    for (; i + 10 <= size; i += 10) {
        size_t off = ((size_t)data[i] | (size_t)data[i + 1] << 8) %
                     (tmpl_len - 7);
        memcpy(img + off, data + i + 2, 8);
    }
    gm_reader_check_bytes(img, len);
    free(img);
    return 0;
}

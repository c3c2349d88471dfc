/*
 * shim/telemetry/marks.c — steps and marks a program reports itself
 * (gpumem_step, gpumem_mark): the header's counters, one ring record per
 * device that has stats, the mark's label in the bounded mark table, and
 * the label's sanitising (any bytes in, valid UTF-8 without control
 * characters out).
 *
 * Invariants: the header's step count only grows (raised to the caller's
 * count, which may come from before the segment existed); a mark slot is
 * written by the one caller that claimed its number, under the slot's
 * seqlock (seq = number + 1, BUSY while written; a slot already holding a
 * newer mark is left alone); no label byte beyond the first NUL or the
 * first GM_ABI_MARK_LABEL - 1 output bytes is read.
 */
#include "shim/telemetry/marks.h"

#include <string.h>

#include "shim/base/clock.h"
#include "shim/telemetry/hist.h"
#include "shim/telemetry/telwrite.h"

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static unsigned utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    unsigned n, min;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x3fu >> (n - 1));
    for (unsigned i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

size_t gm_mark_label(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return 0;
    const unsigned char *s = (const unsigned char *)(in ? in : "");
    while (*s != '\0' && o + 1 < cap) {
        unsigned n = utf8_len(s);
        if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7f))) {
            out[o++] = '?'; /* an invalid byte or a control character */
            s++;
            continue;
        }
        if (o + n >= cap)
            break; /* cut at a character boundary */
        memcpy(out + o, s, n);
        o += n;
        s += n;
    }
    out[o] = '\0';
    return o;
}

/* One record per device with stats (its used), or one without a device. */
static void push_all(const struct gm_tw *w, unsigned kind, uint64_t now,
                     uint64_t size, uint64_t addr, uint64_t extra)
{
    uint64_t seen = TW_LD_ACQ(&w->h->dev_seen);
    unsigned n = seen < w->dev_slots ? (unsigned)seen : w->dev_slots;
    bool any = false;
    for (unsigned i = 0; i < n; i++) {
        struct gm_abi_dev *d = &w->devs[i];
        if (tw_get(&d->present) == 0)
            continue;
        /* Entering the block lets the step roll the history. */
        d = tw_stats_enter(w, i, now, true);
        uint64_t used = tw_get(&d->used);
        tw_stats_end(d);
        tw_ring_push(w, kind, GM_API_NONE, i, now, 0, size, addr, used,
                     extra);
        any = true;
    }
    if (!any)
        tw_ring_push(w, kind, GM_API_NONE, GM_ABI_NO_DEVICE, now, 0, size,
                     addr, 0, extra);
}

void gm_tel_step(struct gm_tel *t, uint64_t steps)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_header *h = w->h;
    /* Raised, not added: the caller's count includes steps made before
     * the segment existed; concurrent callers come in any order. */
    if (steps > TW_LD(&h->steps))
        TW_ST_REL(&h->steps, steps); /* pairs with the readers' acquire */
    push_all(w, GM_EV_STEP, now, steps, 0, 0);
    tw_unlock(t);
}

void gm_tel_mark(struct gm_tel *t, const char *label)
{
    char clean[GM_ABI_MARK_LABEL] = { 0 };
    size_t len = gm_mark_label(label, clean, sizeof clean);
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_header *h = w->h;
    uint64_t step = TW_LD(&h->steps);
    uint64_t num = __atomic_fetch_add(&h->marks, 1, __ATOMIC_RELAXED);
    struct gm_abi_mark *m = &w->marks[num % GM_ABI_MARKS];
    uint64_t want = num + 1, s = TW_LD_RLX(&m->seq);
    bool claimed = false;
    while (!(s & GM_ABI_SEQ_BUSY) && s < want) {
        if (__atomic_compare_exchange_n(&m->seq, &s, want | GM_ABI_SEQ_BUSY,
                                        true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            claimed = true;
            break;
        }
    }
    if (claimed) {
        /* Release stores: each is ordered after the BUSY mark above. */
        TW_ST_REL(&m->ts_ns, now);
        TW_ST_REL(&m->step, step);
        for (size_t i = 0; i < sizeof m->label; i += 8) {
            uint64_t word;
            memcpy(&word, clean + i, 8);
            TW_ST_REL((uint64_t *)(void *)(m->label + i), word);
        }
        TW_ST_REL(&m->seq, want); /* pairs with gm_tel_read_mark */
    }
    push_all(w, GM_EV_MARK, now, step, num, len);
    tw_unlock(t);
}

bool gm_tel_read_mark(const struct gm_abi_mark *src, uint64_t number,
                      struct gm_abi_mark *dst)
{
    uint64_t s1 = TW_LD_ACQ(&src->seq); /* pairs with gm_tel_mark */
    if (s1 != number + 1)
        return false;
    dst->ts_ns = TW_LD_ACQ(&src->ts_ns);
    dst->step = TW_LD_ACQ(&src->step);
    for (size_t i = 0; i < sizeof dst->label; i += 8) {
        uint64_t w = TW_LD_ACQ((const uint64_t *)(const void *)(src->label +
                                                                i));
        memcpy(dst->label + i, &w, 8);
    }
    if (TW_LD_RLX(&src->seq) != s1)
        return false;
    dst->seq = s1;
    dst->label[sizeof dst->label - 1] = '\0';
    return true;
}

/*
 * shim/record/recfmt.h — the recording file format (docs/trace.md): what
 * `gpumem record` writes and `gpumem replay` and `gpumem log --from` read.
 *
 * A recording is one or more process sections. A section is a 64-byte
 * header followed by 64-byte records, one per driver call the program
 * made (and one per gap where records were lost). Integers are
 * little-endian as on every machine the shim runs on (the reader refuses
 * a foreign byte order by the magic). A section whose writer ended
 * without closing it (crash, exec, kill) has count 0 and no CLOSED flag;
 * its records end at the first all-zero slot.
 *
 * Invariants: record_size and header_size are 64, records are page
 * aligned in the writer's file (header 64 + 64*i), op is never 0 in a
 * written record, seq grows by one per record of a section.
 */
#ifndef GM_RECFMT_H
#define GM_RECFMT_H

#include <stdint.h>

/* "GMRECORD" read as a little-endian 64-bit integer. */
#define GM_REC_MAGIC 0x44524f434552474dull
#define GM_REC_VERSION 1u
#define GM_REC_SIZE 64u

#define GM_REC_F_CLOSED 1u    /* the writer closed the section */
#define GM_REC_F_COUNTED 2u   /* not closed by its writer (crash, exec,
                                 kill, or still running when gpumem record
                                 stopped waiting); gpumem record counted
                                 its records */

/* Driver calls. Numbers are part of the format: never renumber. */
enum gm_rec_op {
    GM_RO_NONE = 0,
    GM_RO_ALLOC = 1,        /* cuMemAlloc(_v2): size, addr */
    GM_RO_PITCH = 2,        /* cuMemAllocPitch(_v2): size = pitch*height,
                               aux = width, aux2 = height | elem << 48 */
    GM_RO_MANAGED = 3,      /* cuMemAllocManaged: size, addr, aux = flags */
    GM_RO_ASYNC = 4,        /* cuMemAllocAsync(_ptsz): aux = stream */
    GM_RO_POOL_ALLOC = 5,   /* cuMemAllocFromPoolAsync: aux = stream,
                               aux2 = pool */
    GM_RO_FREE = 6,         /* cuMemFree(_v2): addr */
    GM_RO_FREE_ASYNC = 7,   /* cuMemFreeAsync(_ptsz): addr, aux = stream */
    GM_RO_CREATE = 8,       /* cuMemCreate: size, addr = handle */
    GM_RO_RELEASE = 9,      /* cuMemRelease: addr = handle */
    GM_RO_RETAIN = 10,      /* cuMemRetainAllocationHandle: addr = handle,
                               aux = the mapped address */
    GM_RO_ARRAY = 11,       /* cuArray(3D)Create, cuMipmappedArrayCreate:
                               size = estimated bytes, addr = array,
                               aux = the gm_api number */
    GM_RO_ARRAY_DESTROY = 12, /* cuArrayDestroy / cuMipmappedArrayDestroy */
    GM_RO_CTX = 13,         /* cuCtxCreate*, cuDevicePrimaryCtxRetain:
                               addr = context */
    GM_RO_POOL_TRIM = 14,   /* cuMemPoolTrimTo: aux2 = pool, size = keep */
    GM_RO_SYNC = 15,        /* cuCtx/Stream/EventSynchronize */
    GM_RO_LOST = 16,        /* size = records lost before this one,
                               addr = seq of the first of them */
    GM_RO_MAP = 17,         /* cuMemMap: size, addr = handle, aux = the
                               address mapped, aux2 = offset */
    GM_RO_UNMAP = 18,       /* cuMemUnmap: size, aux = the address */
    GM_RO_COUNT
};

/* Record flags. */
#define GM_RECF_PTSZ 1u      /* the per-thread-stream variant */
#define GM_RECF_V1 2u        /* the 32-bit (_v1) variant */
#define GM_RECF_MIPMAP 4u    /* array: mipmapped */
#define GM_RECF_CTXEND 8u    /* free, array_destroy: the driver freed it
                                with its context (no call of the program) */

struct gm_rec_header {
    uint64_t magic;          /*  0 GM_REC_MAGIC */
    uint32_t version;        /*  8 GM_REC_VERSION */
    uint32_t header_size;    /* 12 64 */
    uint32_t record_size;    /* 16 64 */
    uint32_t pid;            /* 20 */
    uint32_t ppid;           /* 24 */
    uint32_t flags;          /* 28 GM_REC_F_* */
    uint64_t start_ns;       /* 32 CLOCK_REALTIME ns at the first record */
    uint64_t count;          /* 40 records in the section (0: not closed) */
    uint64_t lost;           /* 48 records lost (full disk, ...) */
    uint64_t first_lost_seq; /* 56 seq the first lost record would have had */
};

struct gm_rec {
    uint64_t seq;            /*  0 1, 2, ... within the section */
    uint64_t t_ns;           /*  8 ns since header.start_ns (monotonic) */
    uint64_t size;           /* 16 bytes (op-specific) */
    uint64_t addr;           /* 24 result pointer / handle, or freed one */
    uint64_t aux;            /* 32 op-specific (stream, width, ...) */
    uint64_t aux2;           /* 40 op-specific (pool, height, ...) */
    uint32_t rc;             /* 48 CUresult returned to the program */
    uint32_t tid;            /* 52 calling thread */
    uint16_t op;             /* 56 enum gm_rec_op */
    uint8_t dev;             /* 58 device ordinal, 255 = unknown */
    uint8_t flags;           /* 59 GM_RECF_* */
    uint32_t dt_ns;          /* 60 0 from the shim (reserved); a text
                                   trace's own when loaded from one */
};

_Static_assert(sizeof(struct gm_rec_header) == 64, "recording header");
_Static_assert(sizeof(struct gm_rec) == 64, "recording record");

#endif

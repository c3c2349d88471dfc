/*
 * shim/telemetry/abi.h — the shared-memory layout: the one contract between the shim
 * (writer) and the tools (readers). Documented field by field in docs/abi.md.
 *
 * Identifiers below (API ids, event kinds) are part of the ABI: values are
 * never reused or renumbered; new ones are appended.
 */
#ifndef GM_ABI_H
#define GM_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Which driver entry point (family, not variant) an event came from. */
enum gm_api {
    GM_API_NONE = 0,
    GM_API_MEM_ALLOC,            /* cuMemAlloc, cuMemAlloc_v2 */
    GM_API_MEM_ALLOC_PITCH,      /* cuMemAllocPitch(_v2) */
    GM_API_MEM_ALLOC_MANAGED,    /* cuMemAllocManaged */
    GM_API_MEM_FREE,             /* cuMemFree(_v2) */
    GM_API_MEM_ALLOC_ASYNC,      /* cuMemAllocAsync(_ptsz) */
    GM_API_MEM_ALLOC_FROM_POOL,  /* cuMemAllocFromPoolAsync(_ptsz) */
    GM_API_MEM_FREE_ASYNC,       /* cuMemFreeAsync(_ptsz) */
    GM_API_MEM_CREATE,           /* cuMemCreate */
    GM_API_MEM_RELEASE,          /* cuMemRelease */
    GM_API_MEM_RETAIN,           /* cuMemRetainAllocationHandle */
    GM_API_ARRAY_CREATE,         /* cuArrayCreate(_v2) */
    GM_API_ARRAY3D_CREATE,       /* cuArray3DCreate(_v2) */
    GM_API_ARRAY_DESTROY,        /* cuArrayDestroy */
    GM_API_MIPMAP_CREATE,        /* cuMipmappedArrayCreate */
    GM_API_MIPMAP_DESTROY,       /* cuMipmappedArrayDestroy */
    GM_API_MEM_HOST_ALLOC,       /* cuMemHostAlloc */
    GM_API_MEM_ALLOC_HOST,       /* cuMemAllocHost(_v2) */
    GM_API_MEM_FREE_HOST,        /* cuMemFreeHost */
    GM_API_CTX_CREATE,           /* cuCtxCreate(_v2/_v3/_v4) */
    GM_API_PRIMARY_CTX_RETAIN,   /* cuDevicePrimaryCtxRetain */
    GM_API_POOL_TRIM,            /* cuMemPoolTrimTo (by gpumem) */
    GM_API_POOL_DESTROY,         /* cuMemPoolDestroy */
    GM_API_CTX_END,              /* freed by its context's end (cuCtxDestroy,
                                    the primary's last release, a reset) */
    GM_API_COUNT
};

/* Event kinds in the ring. */
enum gm_ev_kind {
    GM_EV_NONE = 0,
    GM_EV_ALLOC,       /* memory charged */
    GM_EV_FREE,        /* memory released */
    GM_EV_OOM,         /* request refused at the limit */
    GM_EV_LIMIT,       /* limit changed (staged freeze, ...) */
    GM_EV_CONTEXT,     /* context memory measured and charged */
    GM_EV_SPILL,       /* refused request served as managed memory */
    GM_EV_MODE,        /* mode change */
    GM_EV_OVER_LIMIT,  /* allowed past the limit (on_oom=warn) */
    GM_EV_WAIT_BEGIN,  /* on_oom=wait: a thread started waiting */
    GM_EV_WAIT_END,    /* ... and stopped (size = bytes, addr = 1 if served) */
    GM_EV_TRIM,        /* pool trimmed; size = bytes returned */
    GM_EV_RECLAIM,     /* a dead group member's charge reclaimed */
    GM_EV_HOST,        /* pinned host memory (size signed in addr field) */
    GM_EV_STEP = 14,   /* gpumem_step(): size = step count after it */
    GM_EV_MARK = 15,   /* gpumem_mark(): addr = mark number (label table) */
    GM_EV_FORECAST = 16, /* the limit is forecast within GPUMEM_WARN_BEFORE */
    GM_EV_CONTEXT_END = 17, /* a charged context ended; size = its bytes */
    GM_EV_CTX_FREED = 18, /* its end freed allocations the program had not:
                             size = their bytes, addr = their count */
    GM_EV_COUNT
};

/* Names: "cuMemAlloc", "alloc", ... ("?" for an unknown value; shim/telemetry/abinames.c). */
const char *gm_api_name(unsigned api);
const char *gm_ev_kind_name(unsigned kind);
/* The same for output read from a segment: a value this build does not
 * know is written by number into buf ("api40", "kind19"; GM_ABI_NAME_CAP
 * bytes always suffice). Returns the name or buf. */
#define GM_ABI_NAME_CAP 16u
const char *gm_api_text(unsigned api, char *buf, size_t cap);
const char *gm_ev_kind_text(unsigned kind, char *buf, size_t cap);

/* ------------------------------------------------------------------------
 * The segment: /dev/shm/<prefix>.<pid>, mode 0600, one per process.
 *
 *   offset 0            struct gm_abi_header       (header_size bytes)
 *   dev_offset          struct gm_abi_dev[dev_slots] (dev_size bytes each)
 *   ring_offset         struct gm_abi_record[ring_capacity] (64 bytes each)
 *   hist_offset         struct gm_abi_mark[GM_ABI_MARKS], then
 *                       struct gm_abi_hist[hist_slots]  (history, v3)
 *   total_size          end of file
 *
 * dev_offset = header_size, ring_offset = dev_offset + dev_slots*dev_size,
 * hist_offset = ring_offset + ring_capacity*record_size, total_size =
 * hist_offset + hist_size, hist_size = GM_ABI_MARKS*64 + hist_slots*
 * sizeof(struct gm_abi_hist). Every offset is a
 * multiple of 64. All integers are native-endian (the segment never leaves
 * the machine). Readers refuse a segment whose magic, version or any size
 * differs from what they were built with.
 *
 * Memory-order contract (docs/abi.md has the full text):
 *  - Header fields other than those marked "atomic" are written once before
 *    `magic` is stored (release); a reader loads `magic` (acquire) first.
 *  - One writer at a time: the writing process's threads update the
 *    segment holding its writer lock (process memory), with plain stores.
 *  - Device blocks: a seqlock; the writer never waits for a reader. It
 *    increments wbegin, fences (release), stores the fields, then
 *    increments wdone (release store). A reader
 *    loads wdone (acquire), wbegin, and when they are equal every field
 *    (acquire) and wbegin again; the copy is consistent when that equals
 *    the wdone it loaded first.
 *  - Ring records: a per-slot seqlock keyed by the event index. The
 *    writer takes index i = ring_head (storing i+1), stores the slot's
 *    seq = (i+1)|GM_ABI_SEQ_BUSY (or drops its record when the slot is
 *    busy or newer), fences (release), stores the fields, then stores
 *    seq = i+1 (release). A reader accepts the slot as event i
 *    only when seq == i+1 before and after copying the fields.
 *  - History buckets and marks: the same per-slot seqlock keyed by the
 *    bucket's (mark's) index; buckets have one writer at a time (the
 *    device's roll lock, hist_lock), merges into a coarser bucket mark it
 *    BUSY again. The OOM snapshot is written once: state 0 -> 1 (claimed,
 *    compare-exchange) -> 2 (complete, release).
 * ------------------------------------------------------------------------ */

/* "GPUMEMSG" read as a little-endian 64-bit integer. */
#define GM_ABI_MAGIC 0x47534d454d555047ull
#define GM_ABI_VERSION 4u

#define GM_ABI_MAX_DEVICES 64u      /* device blocks at most */
#define GM_ABI_RECORD_SIZE 64u
#define GM_ABI_RING_MIN 16u         /* ring capacity bounds (powers of two) */
#define GM_ABI_RING_MAX (1u << 24)
#define GM_ABI_RING_DEFAULT 65536u
#define GM_ABI_CMDLINE_LEN 512u     /* NUL-terminated within the field */
#define GM_ABI_POLICY_LEN 512u
#define GM_ABI_SIZE_BUCKETS 48u     /* bucket b: sizes in [2^b, 2^(b+1)) */
#define GM_ABI_LAT_BUCKETS 40u      /* bucket b: ns in [2^b, 2^(b+1)) */

/* History (docs/abi.md "History"): tier t bucket i covers
 * [hist_base_ns + i*W_t, hist_base_ns + (i+1)*W_t), W_t = 1 s * 16^t. */
#define GM_ABI_HIST_TIERS 3u
#define GM_ABI_HIST_BUCKETS 512u     /* per tier, a ring keyed by index */
#define GM_ABI_HIST_FOLD 16u         /* tier t+1 bucket = 16 tier t buckets */
#define GM_ABI_HIST_TICK_NS 1000000000ull /* tier 0 bucket width */
#define GM_ABI_HIST_DEVICES 16u      /* devices with a history, at most */
#define GM_ABI_MARKS 128u            /* label table: the last 128 marks */
#define GM_ABI_MARK_LABEL 40u        /* bytes, NUL-terminated within */
#define GM_ABI_OOM_CLASSES 16u       /* OOM snapshot: classes kept */

/* OOM snapshot states. */
#define GM_ABI_OOM_EMPTY 0u
#define GM_ABI_OOM_WRITING 1u
#define GM_ABI_OOM_DONE 2u
/* OOM snapshot flags. */
#define GM_ABI_OOMF_FRAG 1u          /* largest_free / frag_ppm are known */
#define GM_ABI_OOMF_TRUNCATED 2u     /* the walk stopped at its bound */
#define GM_ABI_OOMF_ARENA 4u         /* static mode: blocks are the arena's,
                                        not in classes[] */

/* Record seq: bit 63 set while a producer is writing the slot. */
#define GM_ABI_SEQ_BUSY (1ull << 63)
/* Record dev for events that belong to no device (GM_EV_HOST). */
#define GM_ABI_NO_DEVICE 0xffffffffu

/* Header flags. */
#define GM_ABI_F_CLOSED 1u   /* the writer closed the segment (normal exit) */
#define GM_ABI_F_KEPT 2u     /* ... and left it in place (GPUMEM_KEEP=1) */

/* Identity flags (struct gm_abi_ident.flags). */
#define GM_ID_F_SET 1u        /* the writer recorded its identity */
#define GM_ID_F_POD_ENV 2u    /* pod names from the downward-API variables */
#define GM_ID_F_POD_CGROUP 4u /* pod uid from the cgroup path */
#define GM_ID_F_ALTERED 8u    /* a value was truncated or had bytes replaced */
#define GM_ID_F_MOUNTS 16u    /* container id or pod uid from the mount table
                                 (the cgroup path named none) */

/* Identity string fields: NUL-terminated within the field, bytes only from
 * [A-Za-z0-9._:@+-] (anything else was replaced by '_'). */
#define GM_ID_JOB_LEN 32u
#define GM_ID_STEP_LEN 16u
#define GM_ID_USER_LEN 64u
#define GM_ID_NS_LEN 64u
#define GM_ID_POD_LEN 256u
#define GM_ID_CTR_LEN 64u
#define GM_ID_PODUID_LEN 48u
#define GM_ID_CID_LEN 80u
#define GM_ID_RUNTIME_LEN 16u

/* The job identity the writer could see at its first CUDA use (header
 * offset 1280; every field written once, before magic). */
struct gm_abi_ident {
    uint32_t flags;              /*    0  GM_ID_F_* */
    uint32_t uid;                /*    4  getuid() of the writer */
    uint64_t pidns;              /*    8  inode of /proc/self/ns/pid (0: ?) */
    char job_id[GM_ID_JOB_LEN];          /*  16  SLURM_JOB_ID */
    char step_id[GM_ID_STEP_LEN];        /*  48  SLURM_STEP_ID */
    char job_user[GM_ID_USER_LEN];       /*  64  SLURM_JOB_USER */
    char pod_namespace[GM_ID_NS_LEN];    /* 128  Kubernetes namespace */
    char pod_name[GM_ID_POD_LEN];        /* 192  Kubernetes pod */
    char container_name[GM_ID_CTR_LEN];  /* 448  GPUMEM_CONTAINER_NAME */
    char pod_uid[GM_ID_PODUID_LEN];      /* 512  pod uid (cgroup path) */
    char container_id[GM_ID_CID_LEN];    /* 560  from /proc/self/cgroup */
    char runtime[GM_ID_RUNTIME_LEN];     /* 640  docker, containerd, cri-o */
    uint64_t reserved[14];       /*  656  zero */
};                               /*  768 */

struct gm_abi_header {
    uint64_t magic;              /*    0  GM_ABI_MAGIC, stored last (release) */
    uint32_t abi_version;        /*    8  GM_ABI_VERSION */
    uint32_t header_size;        /*   12  sizeof(struct gm_abi_header) */
    uint32_t dev_size;           /*   16  sizeof(struct gm_abi_dev) */
    uint32_t record_size;        /*   20  GM_ABI_RECORD_SIZE */
    uint32_t dev_slots;          /*   24  device blocks, 1..64 */
    uint32_t ring_capacity;      /*   28  records, power of two */
    uint64_t dev_offset;         /*   32  = header_size */
    uint64_t ring_offset;        /*   40  = dev_offset + dev_slots*dev_size */
    uint64_t total_size;         /*   48  bytes in the segment */
    uint32_t pid;                /*   56  writer's pid */
    uint32_t mode;               /*   60  enum gm_mode (policy/policy.h) */
    uint32_t on_oom;             /*   64  enum gm_on_oom */
    uint32_t flags;              /*   68  atomic: GM_ABI_F_* */
    uint64_t start_ticks;        /*   72  /proc/<pid>/stat field 22 (or 0) */
    uint64_t start_realtime_ns;  /*   80  process start, CLOCK_REALTIME ns */
    uint64_t created_ns;         /*   88  segment creation, CLOCK_REALTIME ns */
    uint64_t closed_ns;          /*   96  atomic: when closed (0: open) */
    uint64_t dev_seen;           /*  104  atomic: 1 + highest device written */
    uint64_t host_pinned;        /*  112  atomic: pinned host bytes, process */
    uint64_t ring_dropped;       /*  120  atomic: records producers dropped */
    char cmdline[GM_ABI_CMDLINE_LEN]; /* 128 /proc/self/cmdline, NULs -> ' ' */
    char policy[GM_ABI_POLICY_LEN];   /* 640 effective policy summary */
    uint64_t ring_head;          /* 1152  atomic: events claimed so far */
    uint64_t pad_head[7];        /* 1160  keeps ring_head on its own line */
    /* History (v3): */
    uint64_t hist_offset;        /* 1216  = ring_offset + ring bytes */
    uint64_t hist_size;          /* 1224  marks + hist_slots histories */
    uint32_t hist_slots;         /* 1232  = min(dev_slots, 16) */
    uint32_t hist_tiers;         /* 1236  GM_ABI_HIST_TIERS */
    uint32_t hist_buckets;       /* 1240  GM_ABI_HIST_BUCKETS */
    uint32_t hist_bucket_size;   /* 1244  sizeof(struct gm_abi_bucket) */
    uint64_t hist_base_ns;       /* 1248  CLOCK_REALTIME ns of bucket 0 */
    uint64_t steps;              /* 1256  atomic: gpumem_step() calls */
    uint64_t marks;              /* 1264  atomic: gpumem_mark() calls */
    uint32_t marks_capacity;     /* 1272  GM_ABI_MARKS */
    uint32_t hist_dev_size;      /* 1276  sizeof(struct gm_abi_hist) */
    struct gm_abi_ident ident;   /* 1280  job identity */
};                               /* 2048 */

struct gm_abi_dev {
    uint64_t wbegin;             /*    0  atomic: writers that entered */
    uint64_t wdone;              /*    8  atomic: writers that left */
    uint64_t present;            /*   16  1 once the device was used */
    uint64_t physical;           /*   24  physical total bytes (0: unknown) */
    uint64_t limit;              /*   32  bytes, 0 = no limit */
    uint64_t used;               /*   40  bytes charged now */
    uint64_t peak;               /*   48  high-water mark of used */
    uint64_t peak_ns;            /*   56  CLOCK_REALTIME ns, peak last rose */
    uint64_t context_bytes;      /*   64  context memory charged now (live contexts) */
    uint64_t pool_reserve;       /*   72  bytes held by stream-ordered pools */
    uint64_t allocs;             /*   80  allocations charged */
    uint64_t frees;              /*   88  releases */
    uint64_t refusals;           /*   96  requests refused (OOM) */
    uint64_t spills;             /*  104  requests served as managed memory */
    uint64_t spilled_bytes;      /*  112 */
    uint64_t over_limit;         /*  120  allowed past the limit (warn) */
    uint64_t total_bytes;        /*  128  bytes allocated since start */
    uint64_t live_allocs;        /*  136  allocations not yet released */
    uint64_t live_bytes;         /*  144  their bytes */
    uint64_t frag_ppm;           /*  152  fragmentation now, ppm */
    uint64_t frag_peak_ppm;      /*  160  fragmentation when peak was reached */
    uint64_t waits;              /*  168  on_oom=wait waits begun */
    uint64_t trims;              /*  176  pool trims */
    uint64_t trimmed_bytes;      /*  184 */
    uint64_t reclaims;           /*  192  group charges reclaimed */
    uint64_t reclaimed_bytes;    /*  200 */
    uint64_t last_ns;            /*  208  CLOCK_REALTIME ns, last update */
    uint64_t lat_sum_ns;         /*  216  sum of allocation latencies */
    uint64_t uuid[2];            /*  224  device UUID (cuDeviceGetUuid_v2's 16
                                           bytes, in order); 0: unknown */
    uint64_t context_peak;       /*  240  most context memory charged at once */
    uint64_t ended_bytes;        /*  248  bytes freed by their context's end
                                           (never by the program; v4, 0 before) */
    uint64_t size_hist[GM_ABI_SIZE_BUCKETS]; /* 256 allocation sizes, log2 */
    uint64_t lat_hist[GM_ABI_LAT_BUCKETS];   /* 640 allocation latency, log2 */
    /* The open history bucket (v3; seqlocked with the block): */
    uint64_t hist_next_ns;       /*  960  the open bucket ends here (0: none) */
    uint64_t hist_open;          /*  968  its tier-0 index */
    uint64_t hist_min;           /*  976  least used seen in it */
    uint64_t hist_max;           /*  984  greatest used seen in it */
    uint64_t hist_allocs0;       /*  992  allocs when it opened */
    uint64_t hist_frees0;        /* 1000  frees when it opened */
    uint64_t hist_refusals0;     /* 1008  refusals when it opened */
    uint64_t hist_lock;          /* 1016  atomic: 1 while a roll runs */
};                               /* 1024 */

struct gm_abi_record {
    uint64_t seq;                /*    0  index+1 when published; BUSY bit */
    uint64_t ts_ns;              /*    8  CLOCK_REALTIME ns */
    uint16_t kind;               /*   16  enum gm_ev_kind */
    uint16_t api;                /*   18  enum gm_api */
    uint32_t dev;                /*   20  device ordinal or GM_ABI_NO_DEVICE */
    uint32_t tid;                /*   24  writer thread id (gettid) */
    uint32_t lat_ns;             /*   28  driver-call latency, saturated */
    uint64_t size;               /*   32  bytes (kind-specific, docs/abi.md) */
    uint64_t addr;               /*   40  address / handle (kind-specific) */
    uint64_t used_after;         /*   48  device used after the event */
    uint64_t extra;              /*   56  kind-specific (OOM: the limit) */
};                               /*   64 */

/* One history bucket (64 bytes). Per-slot seqlock like ring records. */
struct gm_abi_bucket {
    uint64_t seq;                /*    0  index+1 when published; BUSY bit */
    uint64_t used_min;           /*    8  least used in the interval */
    uint64_t used_max;           /*   16  greatest used in the interval */
    uint64_t used_last;          /*   24  used at its end */
    uint64_t live_allocs;        /*   32  live allocations at its end */
    uint64_t allocs;             /*   40  allocations in the interval */
    uint64_t frees;              /*   48  releases in the interval */
    uint32_t refusals;           /*   56  refusals in it (saturated) */
    uint32_t steps;              /*   60  step count at its end (saturated) */
};

/* A mark's label (64 bytes); seq = mark number + 1 (BUSY while written). */
struct gm_abi_mark {
    uint64_t seq;                /*    0 */
    uint64_t ts_ns;              /*    8  CLOCK_REALTIME ns */
    uint64_t step;               /*   16  step count when marked */
    char label[GM_ABI_MARK_LABEL]; /* 24  valid UTF-8, NUL-terminated */
};

/* OOM snapshot: one class of live allocations (64 bytes). */
struct gm_abi_oom_class {
    uint64_t size_min;           /*    0  smallest allocation in it */
    uint64_t size_max;           /*    8  largest */
    uint64_t bytes;              /*   16  their sum */
    uint64_t count;              /*   24  allocations */
    uint64_t oldest_ns;          /*   32  CLOCK_REALTIME ns, oldest birth */
    uint64_t newest_ns;          /*   40  newest birth */
    uint32_t oldest_step;        /*   48  step count at the oldest birth */
    uint32_t newest_step;        /*   52  ... at the newest */
    uint16_t api;                /*   56  enum gm_api */
    uint16_t size_log2;          /*   58  class: sizes in [2^k, 2^(k+1)) */
    uint32_t pad;                /*   60  zero */
};

/* OOM snapshot of a device's first refusal (1152 bytes). */
struct gm_abi_oom {
    uint64_t state;              /*    0  atomic: GM_ABI_OOM_* */
    uint64_t ts_ns;              /*    8  CLOCK_REALTIME ns of the refusal */
    uint64_t size;               /*   16  bytes requested */
    uint32_t api;                /*   24  enum gm_api of the request */
    uint32_t nclasses;           /*   28  classes[] filled, by bytes desc */
    uint64_t used;               /*   32  device used at the refusal */
    uint64_t limit;              /*   40  the limit */
    uint64_t step;               /*   48  step count at the refusal */
    uint64_t live_allocs;        /*   56  live allocations walked */
    uint64_t live_bytes;         /*   64  their bytes */
    uint64_t largest_free;       /*   72  largest free gap (OOMF_FRAG) */
    uint64_t frag_ppm;           /*   80  fragmentation (OOMF_FRAG) */
    uint32_t flags;              /*   88  GM_ABI_OOMF_* */
    uint32_t pad;                /*   92  zero */
    uint64_t other_count;        /*   96  allocations outside classes[] */
    uint64_t other_bytes;        /*  104  their bytes */
    uint64_t reserved[2];        /*  112  zero */
    struct gm_abi_oom_class classes[GM_ABI_OOM_CLASSES]; /* 128 */
};

/* One device's history: the OOM snapshot and three tiers of buckets. */
struct gm_abi_hist {
    struct gm_abi_oom oom;       /*     0 */
    struct gm_abi_bucket tier[GM_ABI_HIST_TIERS][GM_ABI_HIST_BUCKETS];
};                               /* 1152 + 98304 = 99456 */

_Static_assert(sizeof(struct gm_abi_bucket) == 64, "bucket size");
_Static_assert(sizeof(struct gm_abi_mark) == 64, "mark size");
_Static_assert(sizeof(struct gm_abi_oom_class) == 64, "oom class size");
_Static_assert(sizeof(struct gm_abi_oom) == 1152, "oom size");
_Static_assert(offsetof(struct gm_abi_oom, classes) == 128, "oom classes");
_Static_assert(sizeof(struct gm_abi_hist) == 99456, "hist size");
_Static_assert(offsetof(struct gm_abi_header, hist_offset) == 1216,
               "hist_offset");
_Static_assert(offsetof(struct gm_abi_header, steps) == 1256, "steps");
_Static_assert(offsetof(struct gm_abi_dev, uuid) == 224, "uuid");
_Static_assert(offsetof(struct gm_abi_dev, hist_next_ns) == 960,
               "hist_next_ns");
_Static_assert(sizeof(struct gm_abi_header) == 2048, "header size");
_Static_assert(offsetof(struct gm_abi_header, flags) == 68, "flags");
_Static_assert(offsetof(struct gm_abi_header, ring_dropped) == 120,
               "ring_dropped");
_Static_assert(offsetof(struct gm_abi_header, cmdline) == 128,
               "cmdline");
_Static_assert(offsetof(struct gm_abi_header, policy) == 640,
               "policy");
_Static_assert(offsetof(struct gm_abi_header, ring_head) == 1152,
               "ring_head");
_Static_assert(offsetof(struct gm_abi_header, ident) == 1280, "ident");
_Static_assert(sizeof(struct gm_abi_ident) == 768, "ident size");
_Static_assert(offsetof(struct gm_abi_ident, job_id) == 16, "job_id");
_Static_assert(offsetof(struct gm_abi_ident, pod_name) == 192, "pod_name");
_Static_assert(offsetof(struct gm_abi_ident, container_id) == 560, "cid");
_Static_assert(offsetof(struct gm_abi_ident, runtime) == 640, "runtime");
_Static_assert(sizeof(struct gm_abi_dev) == 1024, "device block size");
_Static_assert(offsetof(struct gm_abi_dev, present) == 16, "present");
_Static_assert(offsetof(struct gm_abi_dev, lat_sum_ns) == 216,
               "lat_sum_ns");
_Static_assert(offsetof(struct gm_abi_dev, size_hist) == 256,
               "size_hist");
_Static_assert(offsetof(struct gm_abi_dev, lat_hist) == 640,
               "lat_hist");
_Static_assert(sizeof(struct gm_abi_record) == GM_ABI_RECORD_SIZE,
               "record size");
_Static_assert(offsetof(struct gm_abi_record, kind) == 16, "kind");
_Static_assert(offsetof(struct gm_abi_record, lat_ns) == 28, "lat");
_Static_assert(offsetof(struct gm_abi_record, size) == 32, "size");
_Static_assert(offsetof(struct gm_abi_record, extra) == 56, "extra");
_Static_assert(GM_EV_COUNT <= 65535 && GM_API_COUNT <= 65535, "u16 ids");

#endif

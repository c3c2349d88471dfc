/*
 * shim/telemetry/ident.c — collecting, cleaning and labelling the job
 * identity of a process (see shim/telemetry/ident.h).
 *
 * Invariants: every string written is NUL-terminated within its field and
 * holds only safe bytes; parsing never reads past the text it was given;
 * no malloc, and the files read are bounded.
 */
#include "shim/telemetry/ident.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool safe_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
           c == '@' || c == '+' || c == '-';
}

bool gm_ident_clean(char *dst, size_t cap, const char *src)
{
    bool changed = false;
    size_t i = 0;
    if (src != NULL) {
        for (; src[i] != '\0' && i + 1 < cap; i++) {
            unsigned char c = (unsigned char)src[i];
            dst[i] = safe_byte(c) ? (char)c : '_';
            changed |= !safe_byte(c);
        }
        changed |= src[i] != '\0';
    }
    dst[i] = '\0';
    return changed;
}

/* ---- cgroup paths --------------------------------------------------------- */

static bool is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

static bool starts(const char *p, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(p, pre, k) == 0;
}

/* One path component [p, p+n): a container id with an optional runtime
 * prefix and ".scope" suffix. Returns the runtime name ("" when the
 * component is the bare id) or NULL when it is not a container's. */
static const char *component_cid(const char *p, size_t n, const char **id)
{
    static const struct { const char *pre, *runtime; } forms[] = {
        { "docker-", "docker" },
        { "cri-containerd-", "containerd" },
        { "crio-", "cri-o" },
        { "libpod-", "podman" },
        { "containerd-", "containerd" },
    };
    const char *runtime = "";
    if (n > 6 && memcmp(p + n - 6, ".scope", 6) == 0) {
        n -= 6;
        runtime = NULL;
        for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
            if (starts(p, n, forms[i].pre)) {
                size_t k = strlen(forms[i].pre);
                p += k;
                n -= k;
                runtime = forms[i].runtime;
                break;
            }
        if (runtime == NULL)
            return NULL; /* another kind of scope (crio-conmon-, session) */
    }
    if (n != 64 || !is_hex(p, n))
        return NULL;
    *id = p;
    return runtime;
}

/* A pod uid: 36 characters of hex digits and '-' (or '_', systemd's
 * escaping of '-'), written with '-'. */
static bool pod_uid(const char *p, size_t n, char *out, size_t cap)
{
    if (n != 36 || cap < 37)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? (c != '-' && c != '_') : !is_hex(&c, 1))
            return false;
        out[i] = dash ? '-' : c;
    }
    out[n] = '\0';
    return true;
}

/* ".../pod<uid>" (cgroupfs) or "...-pod<uid>.slice" (systemd). */
static bool component_pod(const char *p, size_t n, char *out, size_t cap)
{
    if (starts(p, n, "pod"))
        return pod_uid(p + 3, n - 3, out, cap);
    if (n > 6 && memcmp(p + n - 6, ".slice", 6) == 0) {
        n -= 6;
        for (size_t i = n; i >= 4; i--)
            if (memcmp(p + i - 4, "-pod", 4) == 0)
                return pod_uid(p + i, n - i, out, cap);
    }
    return false;
}

/* One cgroup path [p, p+n). */
static unsigned parse_path(const char *p, size_t n, struct gm_abi_ident *out,
                           unsigned have)
{
    unsigned found = 0;
    bool docker_dir = false;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/')
            i++;
        size_t b = i;
        while (i < n && p[i] != '/')
            i++;
        const char *c = p + b;
        size_t len = i - b;
        if (len == 0)
            break;
        const char *id = NULL, *rt;
        if (!((have | found) & 2u) &&
            component_pod(c, len, out->pod_uid, sizeof out->pod_uid)) {
            found |= 2u;
        } else if (!((have | found) & 1u) &&
                   (rt = component_cid(c, len, &id)) != NULL) {
            memcpy(out->container_id, id, 64);
            out->container_id[64] = '\0';
            if (rt[0] == '\0' && docker_dir)
                rt = "docker";
            snprintf(out->runtime, sizeof out->runtime, "%s", rt);
            found |= 1u;
        }
        docker_dir |= len == 6 && memcmp(c, "docker", 6) == 0;
    }
    return found;
}

unsigned gm_ident_parse_cgroup(const char *text, size_t n,
                               struct gm_abi_ident *out)
{
    unsigned found = 0;
    size_t i = 0;
    while (i < n && found != 3u) {
        size_t b = i;
        while (i < n && text[i] != '\n' && text[i] != '\0')
            i++;
        size_t e = i;
        if (i < n)
            i++;
        /* "ID:CONTROLLERS:PATH": the path follows the second ':'. */
        const char *c1 = memchr(text + b, ':', e - b);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(text + e - c1 - 1))
                            : NULL;
        if (c2 == NULL)
            continue;
        found |= parse_path(c2 + 1, (size_t)(text + e - c2 - 1), out, found);
    }
    return found;
}

/* The position of the first [p, p+n) occurrence of word in [p, p+n), or
 * NULL. */
static const char *find_in(const char *p, size_t n, const char *word)
{
    size_t k = strlen(word);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, word, k) == 0)
            return p + i;
    return NULL;
}

/* A Kubernetes container name: 1..63 of [a-z0-9-]. */
static size_t k8s_name_len(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && i < 64 && ((p[i] >= 'a' && p[i] <= 'z') ||
                               (p[i] >= '0' && p[i] <= '9') || p[i] == '-'))
        i++;
    return i > 0 && i < 64 && (i == n || p[i] == '/') ? i : 0;
}

/* One mount root [p, p+n). */
static unsigned parse_root(const char *p, size_t n, struct gm_abi_ident *out,
                           unsigned have)
{
    unsigned found = 0;
    static const char *const cdirs[] = { "/overlay-containers/",
                                         "/containers/" };
    for (size_t k = 0; k < 2 && !(have & 1u); k++) {
        const char *c = find_in(p, n, cdirs[k]);
        if (c == NULL)
            continue;
        const char *id = c + strlen(cdirs[k]);
        size_t left = (size_t)(p + n - id);
        if (left >= 65 && id[64] == '/' && is_hex(id, 64)) {
            memcpy(out->container_id, id, 64);
            out->container_id[64] = '\0';
            if (out->runtime[0] == '\0')
                snprintf(out->runtime, sizeof out->runtime, "%s",
                         k == 0 ? "podman" : "docker");
            found |= 1u;
            break;
        }
    }
    const char *pods = find_in(p, n, "/pods/");
    if (pods != NULL) {
        const char *u = pods + 6;
        size_t left = (size_t)(p + n - u);
        char uid[GM_ID_PODUID_LEN];
        if (left >= 37 && u[36] == '/' && pod_uid(u, 36, uid, sizeof uid)) {
            if (!(have & 2u) && out->pod_uid[0] == '\0') {
                memcpy(out->pod_uid, uid, 37);
                found |= 2u;
            }
            const char *rest = u + 37;
            size_t rl = (size_t)(p + n - rest);
            size_t cl;
            if (!(have & 4u) && out->container_name[0] == '\0' &&
                starts(rest, rl, "containers/") &&
                (cl = k8s_name_len(rest + 11, rl - 11)) > 0) {
                memcpy(out->container_name, rest + 11, cl);
                out->container_name[cl] = '\0';
                found |= 4u;
            }
        }
    }
    return found;
}

unsigned gm_ident_parse_mountinfo(const char *text, size_t n,
                                  struct gm_abi_ident *out)
{
    /* Under Kubernetes the per-container files (hostname, resolv.conf)
     * are the pod sandbox's: an id found there names the sandbox, not the
     * container, and is dropped once the kubelet's directories show. */
    bool had_cid = out->container_id[0] != '\0';
    char runtime[GM_ID_RUNTIME_LEN];
    memcpy(runtime, out->runtime, sizeof runtime);
    unsigned found = 0;
    size_t i = 0;
    while (i < n && found != 7u) {
        size_t b = i;
        while (i < n && text[i] != '\n' && text[i] != '\0')
            i++;
        size_t e = i;
        if (i < n)
            i++;
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the fourth field. */
        size_t f = b;
        for (int k = 0; k < 3 && f < e; k++) {
            while (f < e && text[f] != ' ')
                f++;
            while (f < e && text[f] == ' ')
                f++;
        }
        size_t r = f;
        while (r < e && text[r] != ' ')
            r++;
        if (r > f)
            found |= parse_root(text + f, r - f, out, found);
    }
    if ((found & 1u) && !had_cid && find_in(text, n, "/pods/") != NULL &&
        out->pod_uid[0] != '\0') {
        out->container_id[0] = '\0';
        memcpy(out->runtime, runtime, sizeof runtime);
        found &= ~1u;
    }
    return found;
}

unsigned long long gm_ident_parse_nslink(const char *link)
{
    if (strncmp(link, "pid:[", 5) != 0)
        return 0;
    unsigned long long v = 0;
    const char *p = link + 5;
    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (~0ull - 9) / 10)
            return 0;
        v = v * 10 + (unsigned)(*p - '0');
    }
    return p[0] == ']' && p[1] == '\0' ? v : 0;
}

/* ---- collection ------------------------------------------------------------ */

static const char *env_get(char *const *envp, const char *name)
{
    size_t k = strlen(name);
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
        if (strncmp(envp[i], name, k) == 0 && envp[i][k] == '=')
            return envp[i] + k + 1;
    return NULL;
}

/* The first of two variables that is set and non-empty. */
static const char *env_pick(char *const *envp, const char *a, const char *b)
{
    const char *v = env_get(envp, a);
    if (v == NULL || v[0] == '\0')
        v = env_get(envp, b);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static void set_field(struct gm_abi_ident *out, char *dst, size_t cap,
                      const char *v)
{
    if (v != NULL && gm_ident_clean(dst, cap, v))
        out->flags |= GM_ID_F_ALTERED;
}

/* Bounded read of a /proc file into buf; returns the bytes read. */
static size_t read_proc(const char *path, char *buf, size_t cap)
{
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

/* The cgroup path named nothing (a private cgroup namespace): the mount
 * table may. */
static void collect_mounts(struct gm_abi_ident *out)
{
    static char text[GM_IDENT_MOUNTS_MAX]; /* once per process, under the
                                              shim's init lock */
    size_t n = read_proc("/proc/self/mountinfo", text, sizeof text);
    if (gm_ident_parse_mountinfo(text, n, out) & 3u)
        out->flags |= GM_ID_F_MOUNTS;
}

void gm_ident_collect(struct gm_abi_ident *out, char *const *envp)
{
    memset(out, 0, sizeof *out);
    out->uid = (uint32_t)getuid();
    set_field(out, out->job_id, sizeof out->job_id,
              env_get(envp, "SLURM_JOB_ID"));
    set_field(out, out->step_id, sizeof out->step_id,
              env_get(envp, "SLURM_STEP_ID"));
    set_field(out, out->job_user, sizeof out->job_user,
              env_get(envp, "SLURM_JOB_USER"));
    const char *ns = env_pick(envp, GM_IDENT_ENV_POD_NAMESPACE,
                              "POD_NAMESPACE");
    const char *pod = env_pick(envp, GM_IDENT_ENV_POD_NAME, "POD_NAME");
    /* The downward API has no container name: the manifest writes it
     * out, so only gpumem's own variable is read. */
    const char *ctr = env_get(envp, GM_IDENT_ENV_CONTAINER_NAME);
    if (ctr != NULL && ctr[0] == '\0')
        ctr = NULL;
    set_field(out, out->pod_namespace, sizeof out->pod_namespace, ns);
    set_field(out, out->pod_name, sizeof out->pod_name, pod);
    set_field(out, out->container_name, sizeof out->container_name, ctr);
    if (ns != NULL || pod != NULL || ctr != NULL)
        out->flags |= GM_ID_F_POD_ENV;

    static char text[GM_IDENT_CGROUP_MAX]; /* callers serialise (the
                                               shim's init lock) */
    size_t n = read_proc("/proc/self/cgroup", text, sizeof text);
    unsigned cg = gm_ident_parse_cgroup(text, n, out);
    if (cg & 2u)
        out->flags |= GM_ID_F_POD_CGROUP;
    if (cg == 0)
        collect_mounts(out);

    char link[64];
    ssize_t k = readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (k > 0) {
        link[k] = '\0';
        out->pidns = gm_ident_parse_nslink(link);
    }
    out->flags |= GM_ID_F_SET;
}

/* ---- reading and labels ----------------------------------------------------- */

/* Clean a field of possibly hostile memory: read each byte once, stop at
 * the field's end. True when a byte was replaced or the field had no
 * NUL before its last byte. */
static bool copy_field(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    bool changed = false;
    for (; i + 1 < cap; i++) {
        unsigned char c = (unsigned char)__atomic_load_n(&src[i],
                                                         __ATOMIC_RELAXED);
        if (c == '\0')
            break;
        dst[i] = safe_byte(c) ? (char)c : '_';
        changed |= !safe_byte(c);
    }
    changed |= i + 1 == cap &&
               __atomic_load_n(&src[i], __ATOMIC_RELAXED) != '\0';
    dst[i] = '\0';
    return changed;
}

void gm_ident_copy(struct gm_abi_ident *dst, const struct gm_abi_ident *src)
{
    memset(dst, 0, sizeof *dst);
    dst->flags = src->flags & (GM_ID_F_SET | GM_ID_F_POD_ENV |
                               GM_ID_F_POD_CGROUP | GM_ID_F_ALTERED |
                               GM_ID_F_MOUNTS);
    dst->uid = src->uid;
    dst->pidns = src->pidns;
    bool changed = false;
#define CP(f) changed |= copy_field(dst->f, src->f, sizeof dst->f)
    CP(job_id);
    CP(step_id);
    CP(job_user);
    CP(pod_namespace);
    CP(pod_name);
    CP(container_name);
    CP(pod_uid);
    CP(container_id);
    CP(runtime);
#undef CP
    if (changed)
        dst->flags |= GM_ID_F_ALTERED; /* not as the writer left it */
}

const char *gm_ident_job(const struct gm_abi_ident *id, char *buf,
                         size_t cap)
{
    if (cap == 0)
        return buf;
    if (id->job_id[0] != '\0' && id->step_id[0] != '\0')
        snprintf(buf, cap, "%s.%s", id->job_id, id->step_id);
    else if (id->job_id[0] != '\0')
        snprintf(buf, cap, "%s", id->job_id);
    else if (id->pod_name[0] != '\0' && id->pod_namespace[0] != '\0')
        snprintf(buf, cap, "%s/%s", id->pod_namespace, id->pod_name);
    else if (id->pod_name[0] != '\0')
        snprintf(buf, cap, "%s", id->pod_name);
    else if (id->container_id[0] != '\0')
        snprintf(buf, cap, "%.12s", id->container_id);
    else
        snprintf(buf, cap, "-");
    return buf;
}

bool gm_ident_match(const struct gm_abi_ident *id, const char *want)
{
    if (want == NULL || want[0] == '\0')
        return true;
    char buf[GM_ID_NS_LEN + GM_ID_POD_LEN + 2];
    if (strcmp(gm_ident_job(id, buf, sizeof buf), want) == 0)
        return true;
    if (id->job_id[0] != '\0') {
        if (strcmp(id->job_id, want) == 0)
            return true;
        snprintf(buf, sizeof buf, "%s.%s", id->job_id, id->step_id);
        if (id->step_id[0] != '\0' && strcmp(buf, want) == 0)
            return true;
    }
    if (id->pod_name[0] != '\0') {
        if (strcmp(id->pod_name, want) == 0)
            return true;
        snprintf(buf, sizeof buf, "%s/%s", id->pod_namespace, id->pod_name);
        if (strcmp(buf, want) == 0)
            return true;
    }
    if (id->container_name[0] != '\0' &&
        strcmp(id->container_name, want) == 0)
        return true;
    size_t k = strlen(want);
    return k >= 4 && id->container_id[0] != '\0' &&
           strncmp(id->container_id, want, k) == 0;
}

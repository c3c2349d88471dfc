/*
 * tests/unit/test_ident.c — the job identity (shim/telemetry/ident.c):
 * container ids and pod uids from sample /proc/<pid>/cgroup lines of
 * docker (cgroupfs and systemd drivers), containerd and cri-o under
 * Kubernetes (both drivers), podman, and lines that must yield nothing;
 * the mount-table fallback (docker, podman, kubelet pod directories);
 * the cleaning of hostile values (bytes replaced, cut, always
 * NUL-terminated); collection from an environment; the reader's copy of a
 * hostile image; the JOB label and the --job match rules.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "shim/telemetry/ident.h"

#define CID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define UID "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define UIDU "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"

static unsigned parse(const char *text, struct gm_abi_ident *id)
{
    memset(id, 0, sizeof *id);
    return gm_ident_parse_cgroup(text, strlen(text), id);
}

START_TEST(test_cgroup_forms)
{
    static const struct {
        const char *text, *runtime;
        unsigned found;
        const char *pod;
    } cases[] = {
        /* docker, cgroupfs driver, cgroup v1: every controller line */
        { "12:memory:/docker/" CID "\n11:cpu,cpuacct:/docker/" CID "\n",
          "docker", 1, "" },
        /* docker, systemd driver, cgroup v2 */
        { "0::/system.slice/docker-" CID ".scope\n", "docker", 1, "" },
        /* Kubernetes, cgroupfs driver (runtime not named in the path) */
        { "0::/kubepods/burstable/pod" UID "/" CID "\n", "", 3, UID },
        /* Kubernetes, systemd driver, containerd */
        { "0::/kubepods.slice/kubepods-burstable.slice/"
          "kubepods-burstable-pod" UIDU ".slice/cri-containerd-" CID
          ".scope\n", "containerd", 3, UID },
        /* Kubernetes, systemd driver, cri-o (v1 line among others) */
        { "13:pids:/\n"
          "4:memory:/kubepods.slice/kubepods-besteffort.slice/"
          "kubepods-besteffort-pod" UIDU ".slice/crio-" CID ".scope\n",
          "cri-o", 3, UID },
        /* a guaranteed pod: no QoS level in the path */
        { "0::/kubepods.slice/kubepods-pod" UIDU ".slice/crio-" CID
          ".scope", "cri-o", 3, UID },
        /* podman */
        { "0::/user.slice/user-1000.slice/user@1000.service/user.slice/"
          "libpod-" CID ".scope/container\n", "podman", 1, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gm_abi_ident id;
        unsigned f = parse(cases[i].text, &id);
        ck_assert_msg(f == cases[i].found, "case %zu: found %u", i, f);
        ck_assert_str_eq(id.container_id, CID);
        ck_assert_str_eq(id.runtime, cases[i].runtime);
        ck_assert_str_eq(id.pod_uid, cases[i].pod);
    }
}
END_TEST

START_TEST(test_cgroup_nothing)
{
    static const char *none[] = {
        "0::/\n",                                   /* cgroup namespace */
        "0::/user.slice/user-0.slice/session-3.scope\n",
        "0::/system.slice/docker-" CID "x.scope\n", /* 65 characters */
        "0::/system.slice/docker-3F4E" CID ".scope\n",
        "0::/kubepods/burstable/crio-conmon-" CID ".scope\n",
        "0::/docker/" "3f4e5d6c7b8a99887766554433221100\n", /* too short */
        "no colons here " CID "\n",
        "0::/kubepods/podnot-a-uid/x\n",
        "",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        struct gm_abi_ident id;
        ck_assert_msg(parse(none[i], &id) == 0, "case %zu found something",
                      i);
        ck_assert_str_eq(id.container_id, "");
        ck_assert_str_eq(id.pod_uid, "");
    }
    /* Upper-case hex is not a runtime's id form. */
    struct gm_abi_ident id;
    ck_assert_uint_eq(parse("0::/docker/3F4E5D6C7B8A99887766554433221100"
                            "FFEEDDCCBBAA00112233445566778899\n", &id), 0);
    /* Text without a final newline, and a cut buffer: never read past n. */
    char buf[] = "0::/docker/" CID;
    memset(&id, 0, sizeof id);
    ck_assert_uint_eq(gm_ident_parse_cgroup(buf, strlen(buf) - 1, &id), 0);
    ck_assert_uint_eq(gm_ident_parse_cgroup(buf, strlen(buf), &id), 1);
}
END_TEST

/* Mount roots, for a private cgroup namespace: docker's and podman's
 * per-container files, the kubelet's pod directories. */
START_TEST(test_mountinfo_forms)
{
    struct gm_abi_ident id;
    memset(&id, 0, sizeof id);
    const char *docker =
        "1412 1320 0:150 / / rw,relatime master:509 - overlay overlay rw\n"
        "1420 1412 253:1 /var/lib/docker/containers/" CID "/resolv.conf "
        "/etc/resolv.conf rw,relatime - ext4 /dev/vda1 rw\n"
        "1421 1412 253:1 /var/lib/docker/containers/" CID "/hostname "
        "/etc/hostname rw,relatime - ext4 /dev/vda1 rw\n";
    ck_assert_uint_eq(gm_ident_parse_mountinfo(docker, strlen(docker), &id),
                      1);
    ck_assert_str_eq(id.container_id, CID);
    ck_assert_str_eq(id.runtime, "docker");
    memset(&id, 0, sizeof id);
    const char *podman =
        "900 880 0:44 /containers/storage/overlay-containers/" CID
        "/userdata/hostname /etc/hostname rw - tmpfs tmpfs rw\n";
    ck_assert_uint_eq(gm_ident_parse_mountinfo(podman, strlen(podman), &id),
                      1);
    ck_assert_str_eq(id.container_id, CID);
    ck_assert_str_eq(id.runtime, "podman");
    memset(&id, 0, sizeof id);
    const char *k8s =
        "2001 1990 0:310 / / rw - overlay overlay rw\n"
        "2010 2001 253:1 /var/lib/kubelet/pods/" UID "/etc-hosts /etc/hosts "
        "rw - ext4 /dev/vda1 rw\n"
        "2011 2001 253:1 /var/lib/kubelet/pods/" UID "/containers/trainer/"
        "1a2b3c4d /dev/termination-log rw - ext4 /dev/vda1 rw\n"
        "2012 2001 253:1 /var/lib/containerd/io.containerd.grpc.v1.cri/"
        "sandboxes/" CID "/hostname /etc/hostname rw - ext4 /dev/vda1 rw\n"
        /* cri-o: the sandbox's files, which are not this container's */
        "2013 2001 0:23 /containers/storage/overlay-containers/" CID
        "/userdata/resolv.conf /etc/resolv.conf rw - tmpfs tmpfs rw\n";
    ck_assert_uint_eq(gm_ident_parse_mountinfo(k8s, strlen(k8s), &id), 6);
    ck_assert_str_eq(id.pod_uid, UID);
    ck_assert_str_eq(id.container_name, "trainer");
    ck_assert_str_eq(id.container_id, ""); /* a sandbox is not a container */
    ck_assert_str_eq(id.runtime, "");
    /* A name already known is kept; junk yields nothing. */
    memset(&id, 0, sizeof id);
    snprintf(id.container_name, sizeof id.container_name, "mine");
    ck_assert_uint_eq(gm_ident_parse_mountinfo(k8s, strlen(k8s), &id), 2);
    ck_assert_str_eq(id.container_name, "mine");
    static const char *none[] = {
        "1 2 0:1 /var/lib/docker/containers/abc/hostname /etc/hostname\n",
        "1 2 0:1 /var/lib/kubelet/pods/not-a-uid/containers/x/y /z\n",
        "1 2 0:1 /var/lib/kubelet/pods/" UID "/containers/Bad_Name/1 /z\n",
        "garbage without fields",
        "",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        memset(&id, 0, sizeof id);
        unsigned f = gm_ident_parse_mountinfo(none[i], strlen(none[i]), &id);
        ck_assert_msg(f == 0 || (f == 2 && i == 2), "case %zu: %u", i, f);
        ck_assert_str_eq(id.container_id, "");
        ck_assert_str_eq(id.container_name, "");
    }
}
END_TEST

START_TEST(test_nslink)
{
    ck_assert_uint_eq(gm_ident_parse_nslink("pid:[4026531836]"),
                      4026531836ull);
    ck_assert_uint_eq(gm_ident_parse_nslink("pid:[]"), 0);
    ck_assert_uint_eq(gm_ident_parse_nslink("net:[4026531836]"), 0);
    ck_assert_uint_eq(gm_ident_parse_nslink("pid:[12]x"), 0);
    ck_assert_uint_eq(gm_ident_parse_nslink("pid:[99999999999999999999]"),
                      0);
}
END_TEST

START_TEST(test_clean)
{
    char out[8];
    ck_assert(!gm_ident_clean(out, sizeof out, "ab-1.2"));
    ck_assert_str_eq(out, "ab-1.2");
    ck_assert(gm_ident_clean(out, sizeof out, "a\"b\\\n\x1b"));
    ck_assert_str_eq(out, "a_b___");
    ck_assert(gm_ident_clean(out, sizeof out, "0123456789"));
    ck_assert_str_eq(out, "0123456");
    ck_assert(gm_ident_clean(out, sizeof out, "\xc3\xa9t\xc3\xa9"));
    ck_assert_str_eq(out, "__t__");
    ck_assert(!gm_ident_clean(out, sizeof out, NULL));
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_collect_env)
{
    char long_pod[400];
    memset(long_pod, 'p', sizeof long_pod - 1);
    long_pod[sizeof long_pod - 1] = '\0';
    char pod_var[420];
    snprintf(pod_var, sizeof pod_var, "POD_NAME=%s", long_pod);
    char *env[] = {
        "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_JOB_USER=al\"ice",
        "GPUMEM_POD_NAMESPACE=", "POD_NAMESPACE=team-a", pod_var,
        "CONTAINER_NAME=ignored", "GPUMEM_CONTAINER_NAME=trainer", NULL,
    };
    struct gm_abi_ident id;
    gm_ident_collect(&id, env);
    ck_assert_str_eq(id.job_id, "4242");
    ck_assert_str_eq(id.step_id, "0");
    ck_assert_str_eq(id.job_user, "al_ice");
    ck_assert_str_eq(id.pod_namespace, "team-a"); /* empty: the fallback */
    ck_assert_uint_eq(strlen(id.pod_name), GM_ID_POD_LEN - 1);
    ck_assert_str_eq(id.container_name, "trainer");
    ck_assert(id.flags & GM_ID_F_SET);
    ck_assert(id.flags & GM_ID_F_POD_ENV);
    ck_assert(id.flags & GM_ID_F_ALTERED);
    ck_assert_uint_ne(id.pidns, 0); /* /proc/self/ns/pid is readable here */
    char buf[64];
    ck_assert_str_eq(gm_ident_job(&id, buf, sizeof buf), "4242.0");

    char *bare[] = { "HOME=/root", "CONTAINER_NAME=not-ours", NULL };
    gm_ident_collect(&id, bare);
    ck_assert_str_eq(id.job_id, "");
    ck_assert_str_eq(id.container_name, "");
    ck_assert(!(id.flags & (GM_ID_F_POD_ENV | GM_ID_F_ALTERED)));
}
END_TEST

START_TEST(test_copy_hostile)
{
    struct gm_abi_ident src, dst;
    memset(&src, 'A', sizeof src);         /* nothing NUL-terminated */
    memcpy(src.pod_name, "x\"}\n\x7f\xff", 6);
    src.flags = 0xffffffffu;
    gm_ident_copy(&dst, &src);
    ck_assert_uint_eq(strlen(dst.job_id), GM_ID_JOB_LEN - 1);
    ck_assert_uint_eq(strlen(dst.runtime), GM_ID_RUNTIME_LEN - 1);
    ck_assert(strncmp(dst.pod_name, "x_____AAA", 9) == 0);
    ck_assert_uint_eq(dst.flags, GM_ID_F_SET | GM_ID_F_POD_ENV |
                                 GM_ID_F_POD_CGROUP | GM_ID_F_ALTERED |
                                 GM_ID_F_MOUNTS);
    for (size_t i = 0; i < sizeof dst.reserved / sizeof dst.reserved[0]; i++)
        ck_assert_uint_eq(dst.reserved[i], 0);
    /* A clean image copies as it is, not flagged; one bad byte flags it. */
    struct gm_abi_ident ok;
    memset(&ok, 0, sizeof ok);
    ok.flags = GM_ID_F_SET;
    snprintf(ok.job_id, sizeof ok.job_id, "77");
    gm_ident_copy(&dst, &ok);
    ck_assert_uint_eq(dst.flags, GM_ID_F_SET);
    ck_assert_str_eq(dst.job_id, "77");
    ok.runtime[0] = '\n';
    gm_ident_copy(&dst, &ok);
    ck_assert_uint_eq(dst.flags, GM_ID_F_SET | GM_ID_F_ALTERED);
    ck_assert_str_eq(dst.runtime, "_");
}
END_TEST

START_TEST(test_job_label_and_match)
{
    struct gm_abi_ident id;
    char buf[GM_ID_NS_LEN + GM_ID_POD_LEN + 2];
    memset(&id, 0, sizeof id);
    ck_assert_str_eq(gm_ident_job(&id, buf, sizeof buf), "-");
    ck_assert(gm_ident_match(&id, NULL));
    ck_assert(!gm_ident_match(&id, "-x"));
    snprintf(id.container_id, sizeof id.container_id, "%s", CID);
    ck_assert_str_eq(gm_ident_job(&id, buf, sizeof buf), "3f4e5d6c7b8a");
    ck_assert(gm_ident_match(&id, "3f4e"));
    ck_assert(!gm_ident_match(&id, "3f4")); /* too short a prefix */
    ck_assert(!gm_ident_match(&id, "3f4f"));
    snprintf(id.pod_namespace, sizeof id.pod_namespace, "team-a");
    snprintf(id.pod_name, sizeof id.pod_name, "train-0");
    snprintf(id.container_name, sizeof id.container_name, "main");
    ck_assert_str_eq(gm_ident_job(&id, buf, sizeof buf), "team-a/train-0");
    ck_assert(gm_ident_match(&id, "train-0"));
    ck_assert(gm_ident_match(&id, "team-a/train-0"));
    ck_assert(gm_ident_match(&id, "main"));
    ck_assert(!gm_ident_match(&id, "team-a"));
    snprintf(id.job_id, sizeof id.job_id, "77");
    snprintf(id.step_id, sizeof id.step_id, "batch");
    ck_assert_str_eq(gm_ident_job(&id, buf, sizeof buf), "77.batch");
    ck_assert(gm_ident_match(&id, "77"));
    ck_assert(gm_ident_match(&id, "77.batch"));
    ck_assert(!gm_ident_match(&id, "77.0"));
    ck_assert(!gm_ident_match(&id, "7"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ident");
    TCase *tc = tcase_create("ident");
    tcase_add_test(tc, test_cgroup_forms);
    tcase_add_test(tc, test_cgroup_nothing);
    tcase_add_test(tc, test_mountinfo_forms);
    tcase_add_test(tc, test_nslink);
    tcase_add_test(tc, test_clean);
    tcase_add_test(tc, test_collect_env);
    tcase_add_test(tc, test_copy_hostile);
    tcase_add_test(tc, test_job_label_and_match);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}

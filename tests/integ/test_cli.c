/*
 * tests/integ/test_cli.c — what the gpumem command says to a new user:
 * gpumem run's group options, the message for a pid with no segment and
 * for one whose segment is refused (its path once, and why), the
 * pointer to gpumem-top, --version, examples in messages that are accepted,
 * an option's missing value (also when "--" follows it), a flag given a
 * value, the segment prefixes the library refuses refused by every tool,
 * what gpumem record makes of FILE when CMD cannot run or records nothing,
 * what report, replay and log say of a file they cannot use.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "shim/telemetry/abi.h"

static char out[1 << 14];

static int gpumem(const char *const *argv)
{
    return gm_run(NULL, 0, argv, out, sizeof out);
}

START_TEST(run_takes_group_limit_and_priority)
{
    const char *argv[] = { gm_bpath("gpumem"), "run", "--group", "team",
                           "--group-limit", "16G", "--priority", "high",
                           "--", "/bin/sh", "-c",
                           "echo $GPUMEM_GROUP/$GPUMEM_GROUP_LIMIT/$GPUMEM_PRIORITY",
                           NULL };
    ck_assert_int_eq(gpumem(argv), 0);
    ck_assert_msg(strstr(out, "team/16G/high\n") != NULL, "%s", out);
    const char *eq[] = { gm_bpath("gpumem"), "run", "--group=team",
                         "--group-limit=40%", "--", "/bin/sh", "-c",
                         "echo $GPUMEM_GROUP_LIMIT", NULL };
    ck_assert_int_eq(gpumem(eq), 0);
    ck_assert_msg(strstr(out, "40%\n") != NULL, "%s", out);
    /* Every member gives the group's limit: the manual says so, and a
     * member without it is refused (docs/env.md, GPUMEM_GROUP_LIMIT). */
    const char *help[] = { gm_bpath("gpumem"), "help", "run", NULL };
    ck_assert_int_eq(gpumem(help), 0);
    ck_assert_msg(strstr(out, "required with --group, in\n"
                         "                       every member") != NULL &&
                  strstr(out, "needed by the first member") == NULL, "%s",
                  out);
    const char *bare[] = { gm_bpath("gpumem"), "run", "--group", "team", "--",
                           "/bin/true", NULL };
    ck_assert_int_eq(gpumem(bare), 2);
    ck_assert_msg(strstr(out, "GPUMEM_GROUP='team' has no group limit") !=
                  NULL, "%s", out);
}
END_TEST

START_TEST(no_such_process_is_said_plainly)
{
    const char *cmds[] = { "log", "report" };
    for (int i = 0; i < 2; i++) {
        const char *argv[] = { gm_bpath("gpumem"), cmds[i], "999999",
                               "--prefix", "gmtnone", NULL };
        ck_assert_int_ne(gpumem(argv), 0);
        ck_assert_msg(strstr(out, "no gpumem process 999999") != NULL &&
                      strstr(out, "gpumem ps --all") != NULL &&
                      strstr(out, "No such file") == NULL, "%s", out);
    }
}
END_TEST

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* A segment that cannot be read: one line naming its path once, with the
 * reason (another ABI version, a symbolic link, a directory). */
START_TEST(refusal_names_the_path_once)
{
    char dir[] = "/tmp/gmtcli.XXXXXX", de[96], path[3][160], rm[160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(de, sizeof de, "GPUMEM_SHM_DIR=%s", dir);
    const char *env[] = { de, "GPUMEM_SHM_PREFIX=gmtcli", NULL };
    static const char *const pids[3] = { "4000001", "4000002", "4000003" };
    static const char *const why[3] = { "ABI version 5; this tool reads",
                                        "is a symbolic link",
                                        "not a regular non-empty file" };
    for (int i = 0; i < 3; i++)
        snprintf(path[i], sizeof path[i], "%s/gmtcli.%s", dir, pids[i]);
    struct { uint64_t magic; uint32_t version; } head = { GM_ABI_MAGIC, 5 };
    FILE *f = fopen(path[0], "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(&head, sizeof head, 1, f), 1);
    fclose(f);
    ck_assert_int_eq(symlink(path[0], path[1]), 0);
    ck_assert_int_eq(mkdir(path[2], 0700), 0);
    static const char *const cmds[2] = { "report", "log" };
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 2; c++) {
            const char *argv[] = { gm_bpath("gpumem"), cmds[c], pids[i],
                                   NULL };
            int rc = gm_run(env, 0, argv, out, sizeof out);
            ck_assert_msg(rc == 1 && count(out, path[i]) == 1 &&
                          strstr(out, why[i]) != NULL,
                          "%s %s: exit %d: %s", cmds[c], pids[i], rc, out);
        }
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(top_points_to_gpumem_top)
{
    const char *a[] = { gm_bpath("gpumem"), "help", "top", NULL };
    ck_assert_int_eq(gpumem(a), 2);
    ck_assert_msg(strstr(out, "run gpumem-top") != NULL &&
                  strstr(out, "did you mean 'log'") == NULL, "%s", out);
    const char *b[] = { gm_bpath("gpumem"), "top", NULL };
    ck_assert_int_eq(gpumem(b), 2);
    ck_assert_msg(strstr(out, "run gpumem-top") != NULL, "%s", out);
}
END_TEST

START_TEST(version_exits_0)
{
    const char *a[] = { gm_bpath("gpumem"), "--version", NULL };
    ck_assert_int_eq(gpumem(a), 0);
    ck_assert_msg(strncmp(out, "gpumem ", 7) == 0, "%s", out);
    const char *b[] = { gm_bpath("gpumem-top"), "--version", NULL };
    ck_assert_int_eq(gpumem(b), 0);
    ck_assert_msg(strncmp(out, "gpumem-top ", 11) == 0, "%s", out);
}
END_TEST

/* One naming in every JSON output: sizes as KEY_bytes and refusals as
 * "refused", as gpumem report --json says them; the old keys stay. */
START_TEST(json_keys_are_one_schema)
{
    char prefix[64], pe[96], rm[160];
    snprintf(prefix, sizeof prefix, "gmtcli%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pe, "GPUMEM_KEEP=1", NULL };
    const char *run[] = { gm_bpath("gpumem"), "run", "--limit", "500M", "--",
                          gm_bpath("gpumem-trainsim"), "--quiet", NULL };
    ck_assert_int_eq(gm_run(env, 0, run, out, sizeof out), 3);
    const char *ps[] = { gm_bpath("gpumem"), "ps", "--json", "--all",
                         "--prefix", prefix, NULL };
    int rc = gpumem(ps);
    snprintf(rm, sizeof rm, "rm -f /dev/shm/%s.*", prefix);
    ck_assert_int_eq(system(rm), 0);
    ck_assert_int_eq(rc, 0);
    const char *keys[] = { "\"used_bytes\":", "\"peak_bytes\":",
                           "\"limit_bytes\":524288000", "\"context_bytes\":",
                           "\"physical_bytes\":", "\"pool_reserve_bytes\":",
                           "\"total_allocated_bytes\":", "\"refused\":1",
                           "\"used\":", "\"limit\":524288000", "\"ooms\":1" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(out, keys[i]) != NULL, "no %s in %s", keys[i],
                      out);
}
END_TEST

/* gpumem run --mode static with --on-oom: a training run whose arena
 * fills spills or goes past the limit as told, and finishes; fail (and
 * wait, where nothing frees) refuses its step. */
START_TEST(static_run_follows_on_oom)
{
    static const char *const ooms[] = { "spill", "warn", "fail" };
    static const char *const said[] = { "served as managed memory",
                                        "allowed past the limit", "refused" };
    for (int i = 0; i < 3; i++) {
        const char *run[] = { gm_bpath("gpumem"), "run", "--limit", "400M",
                              "--mode", "static", "--on-oom", ooms[i], "--",
                              gm_bpath("gpumem-trainsim"), "--steps", "5",
                              "--quiet", NULL };
        int rc = gm_run(NULL, 0, run, out, sizeof out);
        ck_assert_msg(rc == (i < 2 ? 0 : 3), "%s: exit %d\n%s", ooms[i], rc,
                      out);
        ck_assert_msg(strstr(out, said[i]) != NULL &&
                          (i == 2) == (strstr(out, "trainsim: done") == NULL),
                      "%s:\n%s", ooms[i], out);
    }
}
END_TEST

START_TEST(policy_json_and_text_agree)
{
    const char *js[] = { gm_bpath("gpumem"), "policy", "--json", NULL };
    ck_assert_int_eq(gpumem(js), 0);
    ck_assert_msg(strstr(out, "\"GPUMEM_LIMIT_<N>\": {\"value\": null") !=
                  NULL, "%s", out);
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/a/very/long/path/to/the/"
                          "driver/library/libcuda.so.1", NULL };
    const char *tx[] = { gm_bpath("gpumem"), "policy", NULL };
    ck_assert_int_eq(gm_run(env, 0, tx, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "libcuda.so.1 env") == NULL &&
                  strstr(out, "libcuda.so.1\n") != NULL, "%s", out);
}
END_TEST

/* The examples a refusal gives, "(A, B, C)" after `lead`, each accepted. */
static void examples_accepted(const char *opt, const char *bad,
                              const char *lead)
{
    const char *a[] = { gm_bpath("gpumem"), "exporter", "--once", opt, bad,
                        NULL };
    ck_assert_int_eq(gpumem(a), 2);
    const char *p = strstr(out, lead);
    ck_assert_msg(p != NULL && strchr(p, '(') != NULL, "%s", out);
    char ex[128], said[512];
    snprintf(said, sizeof said, "%s", p);
    snprintf(ex, sizeof ex, "%s", strchr(p, '(') + 1);
    ck_assert_ptr_nonnull(strchr(ex, ')'));
    *strchr(ex, ')') = '\0';
    for (char *save = NULL, *e = strtok_r(ex, ", ", &save); e != NULL;
         e = strtok_r(NULL, ", ", &save)) {
        const char *b[] = { gm_bpath("gpumem"), "exporter", "--once", opt, e,
                            NULL };
        ck_assert_msg(gpumem(b) == 0, "%s %s, an example of '%s', is "
                      "refused: %s", opt, e, said, out);
    }
}

START_TEST(exporter_duration_examples_are_accepted)
{
    examples_accepted("--interval", "500ms", "give a duration");
    examples_accepted("--timeout", "1ms", "give a duration");
}
END_TEST

/* Every value-taking option of every subcommand, followed by "--" (the
 * end of the options) or by nothing, needs a value: "--" is never taken
 * as one (gpumem record -o -- CMD wrote a file named "--"). */
START_TEST(option_before_end_of_options_needs_a_value)
{
    static const char *const opts[][2] = {
        { "run", "--limit" }, { "run", "--mode" }, { "run", "--on-oom" },
        { "run", "--static-size" }, { "run", "--warmup" },
        { "run", "--group" }, { "run", "--group-limit" },
        { "run", "--priority" }, { "run", "--prefix" },
        { "record", "-o" }, { "record", "--output" }, { "record", "--limit" },
        { "replay", "--sweep" }, { "replay", "--points" },
        { "replay", "--pid" }, { "replay", "--device-size" },
        { "replay", "--mode" },
        { "fit", "--limit" }, { "fit", "--param" }, { "fit", "--headroom" },
        { "fit", "--max-runs" }, { "fit", "--mode" },
        { "ps", "--job" }, { "ps", "--prefix" },
        { "log", "--format" }, { "log", "--kinds" }, { "log", "--prefix" },
        { "log", "--from" },
        { "report", "--every" }, { "report", "--svg" }, { "report", "--from" },
        { "report", "--prefix" },
        { "exporter", "--listen" }, { "exporter", "--textfile" },
        { "exporter", "--interval" }, { "exporter", "--timeout" },
        { "exporter", "--compat" }, { "exporter", "--format" },
        { "exporter", "--max-segments" }, { "exporter", "--prefix" },
        { "gc", "--prefix" },
    };
    char want[96];
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        snprintf(want, sizeof want, "option %s needs a value", opts[i][1]);
        const char *a[] = { gm_bpath("gpumem"), opts[i][0], opts[i][1], "--",
                            "true", NULL };
        ck_assert_msg(gpumem(a) == 2 && strstr(out, want) != NULL,
                      "gpumem %s %s -- true: %s", opts[i][0], opts[i][1], out);
        const char *b[] = { gm_bpath("gpumem"), opts[i][0], opts[i][1], NULL };
        ck_assert_msg(gpumem(b) == 2 && strstr(out, want) != NULL,
                      "gpumem %s %s: %s", opts[i][0], opts[i][1], out);
    }
    ck_assert_msg(access("--", F_OK) != 0, "a file named -- was written");
    const char *t[] = { gm_bpath("gpumem-top"), "--once", "--prefix", "--",
                        NULL };
    ck_assert_msg(gpumem(t) == 2 &&
                  strstr(out, "option --prefix needs a value "
                              "(gpumem-top --help)") != NULL, "%s", out);
    static const char *const top_opts[] = { "-d", "--delay", "-n",
                                            "--iterations", "--job" };
    for (size_t i = 0; i < sizeof top_opts / sizeof top_opts[0]; i++) {
        snprintf(want, sizeof want, "option %s needs a value", top_opts[i]);
        const char *c[] = { gm_bpath("gpumem-top"), "--once", top_opts[i],
                            NULL };
        ck_assert_msg(gpumem(c) == 2 && strstr(out, want) != NULL,
                      "gpumem-top --once %s: %s", top_opts[i], out);
    }
}
END_TEST

/* A flag of any subcommand given "=VALUE" says it takes no value (it was
 * "unknown option --report=1"), and nothing runs. */
START_TEST(flag_with_a_value_takes_none)
{
    static const char *const flags[][2] = {
        { "run", "--report" }, { "run", "--keep" }, { "run", "--no-telemetry" },
        { "record", "--report" }, { "replay", "--json" }, { "replay", "--pace" },
        { "replay", "--together" }, { "fit", "--json" }, { "ps", "--json" },
        { "ps", "--all" }, { "log", "-f" }, { "log", "--follow" },
        { "report", "--json" }, { "exporter", "--once" },
        { "exporter", "--dead" }, { "gc", "--dry-run" }, { "gc", "-n" },
        { "policy", "--json" },
    };
    char arg[64], want[96];
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        snprintf(arg, sizeof arg, "%s=1", flags[i][1]);
        snprintf(want, sizeof want, "option %s takes no value", flags[i][1]);
        const char *a[] = { gm_bpath("gpumem"), flags[i][0], arg, "--",
                            "/bin/echo", "ran", NULL };
        ck_assert_msg(gpumem(a) == 2 && strstr(out, want) != NULL &&
                      strstr(out, "ran") == NULL, "gpumem %s %s: %s",
                      flags[i][0], arg, out);
    }
    /* gpumem-top by the same rules (it said "unknown option or missing
     * value '--once=1'"), its values also after '='. */
    static const char *const top_flags[] = { "--once", "--json" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(arg, sizeof arg, "%s=1", top_flags[i]);
        snprintf(want, sizeof want, "option %s takes no value, not '1' "
                 "(gpumem-top --help)", top_flags[i]);
        const char *a[] = { gm_bpath("gpumem-top"), arg, NULL };
        ck_assert_msg(gpumem(a) == 2 && strstr(out, want) != NULL,
                      "gpumem-top %s: %s", arg, out);
    }
    const char *v[] = { gm_bpath("gpumem-top"), "--delay=0.5",
                        "--iterations=1", "--once", NULL };
    ck_assert_msg(gpumem(v) == 0 && strstr(out, "PID") != NULL, "%s", out);
}
END_TEST

/* A prefix the library refuses (empty, a leading '.', "..", '/') is
 * refused by every tool that reads segments, in the library's words and
 * with exit 2: an empty GPUMEM_SHM_PREFIX was read as the default, so
 * gpumem gc cleaned the default prefix's segments. */
START_TEST(tools_refuse_the_prefixes_the_library_refuses)
{
    static const char *const bad[][2] = {
        { "", "is empty" }, { ".x", "starts with '.'" },
        { "..", "starts with '.'" }, { "a/b", "contains '/'" },
    };
    static const char *const tools[][3] = {
        { "gpumem", "ps", NULL }, { "gpumem", "gc", "--dry-run" },
        { "gpumem", "log", NULL }, { "gpumem", "report", NULL },
        { "gpumem", "exporter", "--once" }, { "gpumem-top", "--once", NULL },
    };
    char env[64], said[160], lib[160];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(env, sizeof env, "GPUMEM_SHM_PREFIX=%s", bad[i][0]);
        const char *e[] = { env, NULL };
        const char *pol[] = { gm_bpath("gpumem"), "policy", NULL };
        ck_assert_int_eq(gm_run(e, 0, pol, out, sizeof out), 2);
        snprintf(lib, sizeof lib, "GPUMEM_SHM_PREFIX='%s' %s", bad[i][0],
                 bad[i][1]);
        ck_assert_msg(strstr(out, lib) != NULL, "%s", out);
        for (size_t k = 0; k < sizeof tools / sizeof tools[0]; k++) {
            const char *a[] = { gm_bpath(tools[k][0]), tools[k][1],
                                tools[k][2], NULL };
            ck_assert_msg(gm_run(e, 0, a, out, sizeof out) == 2 &&
                          strstr(out, lib) != NULL, "%s %s with %s: %s",
                          tools[k][0], tools[k][1], env, out);
            const char *o[] = { gm_bpath(tools[k][0]), tools[k][1], "--prefix",
                                bad[i][0], tools[k][2], NULL };
            snprintf(said, sizeof said, "--prefix '%s' %s", bad[i][0],
                     bad[i][1]);
            ck_assert_msg(gpumem(o) == 2 && strstr(out, said) != NULL,
                          "%s %s --prefix '%s': %s", tools[k][0], tools[k][1],
                          bad[i][0], out);
        }
    }
}
END_TEST

static bool file_holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

/* A CMD that cannot be executed (127: not found, 126: not executable)
 * ran nothing: FILE stays as it was, or is not made, and that is said
 * (no empty file in its place). A CMD that ran and made no CUDA call
 * replaces FILE with an empty recording, and that is said. */
START_TEST(record_leaves_file_when_cmd_cannot_run)
{
    char dir[] = "/tmp/gmtcli.XXXXXX", file[64], none[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/r.gmr", dir);
    snprintf(none, sizeof none, "%s/none.gmr", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("an older recording", f);
    fclose(f);
    static const char *const cmds[][2] = { { "gmt-no-such-command", "127" },
                                           { "/etc/passwd", "126" } };
    for (size_t i = 0; i < 2; i++) {
        const char *a[] = { gm_bpath("gpumem"), "record", "-o", file, "--",
                            cmds[i][0], NULL };
        ck_assert_int_eq(gpumem(a), atoi(cmds[i][1]));
        ck_assert_msg(strstr(out, "nothing was recorded") != NULL &&
                      strstr(out, "is left as it was") != NULL &&
                      strstr(out, "-> ") == NULL, "%s", out);
        ck_assert_msg(file_holds(file, "an older recording"), "%s changed",
                      file);
        const char *b[] = { gm_bpath("gpumem"), "record", "-o", none, "--",
                            cmds[i][0], NULL };
        ck_assert_int_eq(gpumem(b), atoi(cmds[i][1]));
        ck_assert_msg(strstr(out, "was not written") != NULL, "%s", out);
        ck_assert_int_ne(access(none, F_OK), 0);
    }
    const char *t[] = { gm_bpath("gpumem"), "record", "-o", file, "--",
                        "true", NULL };
    ck_assert_int_eq(gpumem(t), 0);
    ck_assert_msg(strstr(out, "0 records -> ") != NULL &&
                  strstr(out, "no process of the command made a CUDA "
                         "memory call") != NULL, "%s", out);
    ck_assert(file_holds(file, ""));
    ck_assert_int_eq(unlink(file), 0);
    ck_assert_int_eq(rmdir(dir), 0); /* the private directory is gone */
}
END_TEST

/* report --from a recording names the commands that read one, and a
 * foreign file the form it takes; replay on a device too small for the
 * context says the context's size; log --from and replay --pid say a
 * process the file does not hold, with exit 1. */
START_TEST(trace_file_refusals_say_what_to_do)
{
    char dir[] = "/tmp/gmtcli.XXXXXX", file[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/t.gmr", dir);
    const char *rec[] = { gm_bpath("gpumem"), "record", "-o", file, "--",
                          gm_bpath("gpumem-trainsim"), "--steps", "1",
                          "--quiet", NULL };
    ck_assert_msg(gpumem(rec) == 0, "%s", out);
    const char *r1[] = { gm_bpath("gpumem"), "report", "--from", file, NULL };
    ck_assert_int_eq(gpumem(r1), 1);
    ck_assert_msg(strstr(out, "is a recording") != NULL &&
                  strstr(out, "gpumem replay") != NULL &&
                  strstr(out, "gpumem log --from") != NULL, "%s", out);
    const char *r2[] = { gm_bpath("gpumem"), "report", "--from", "/etc/passwd",
                         NULL };
    ck_assert_int_eq(gpumem(r2), 1);
    ck_assert_msg(strstr(out, "gpumem log --format jsonl") != NULL, "%s",
                  out);
    const char *env[] = { "SIMCUDA_CONTEXT=200M", NULL };
    const char *p1[] = { gm_bpath("gpumem"), "replay", file, "--device-size",
                         "100M", NULL };
    ck_assert_int_eq(gm_run(env, 0, p1, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "below the context's 200.0M") != NULL &&
                  strstr(out, "at least 200.0M") != NULL &&
                  strstr(out, "error 2") == NULL, "%s", out);
    const char *l1[] = { gm_bpath("gpumem"), "log", "--from", file, "99999",
                         NULL };
    ck_assert_int_eq(gpumem(l1), 1);
    ck_assert_msg(strstr(out, "holds no process 99999") != NULL, "%s", out);
    const char *p2[] = { gm_bpath("gpumem"), "replay", file, "--pid", "1",
                         NULL };
    ck_assert_int_eq(gpumem(p2), 1);
    ck_assert_msg(strstr(out, "holds no process 1") != NULL, "%s", out);
    ck_assert_int_eq(unlink(file), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *t = tcase_create("messages");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, run_takes_group_limit_and_priority);
    tcase_add_test(t, no_such_process_is_said_plainly);
    tcase_add_test(t, refusal_names_the_path_once);
    tcase_add_test(t, top_points_to_gpumem_top);
    tcase_add_test(t, version_exits_0);
    tcase_add_test(t, json_keys_are_one_schema);
    tcase_add_test(t, policy_json_and_text_agree);
    tcase_add_test(t, static_run_follows_on_oom);
    tcase_add_test(t, exporter_duration_examples_are_accepted);
    tcase_add_test(t, option_before_end_of_options_needs_a_value);
    tcase_add_test(t, flag_with_a_value_takes_none);
    tcase_add_test(t, tools_refuse_the_prefixes_the_library_refuses);
    tcase_add_test(t, record_leaves_file_when_cmd_cannot_run);
    tcase_add_test(t, trace_file_refusals_say_what_to_do);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}

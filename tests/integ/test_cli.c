/*
 * tests/integ/test_cli.c — what the gpumem command says to a new user:
 * gpumem run's group options, the message for a pid with no segment, the
 * pointer to gpumem-top, --version.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gm_spawn.h"

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

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *t = tcase_create("messages");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, run_takes_group_limit_and_priority);
    tcase_add_test(t, no_such_process_is_said_plainly);
    tcase_add_test(t, top_points_to_gpumem_top);
    tcase_add_test(t, version_exits_0);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}

/*
 * policy/sysconf.c — where the admin policy file is: fixed when the
 * library is built (make SYSCONFDIR=DIR, default /etc), never read from
 * the environment, so a job cannot point the library at a file of its
 * own. This is the only object the build compiles twice: the test build
 * ($(BUILD)/admintest) gets a directory inside the build tree.
 */
#include "policy/policy.h"

#ifndef GM_SYSCONFDIR
#define GM_SYSCONFDIR "/etc"
#endif

const char gm_admin_policy_path[] = GM_SYSCONFDIR "/gpumem/policy";

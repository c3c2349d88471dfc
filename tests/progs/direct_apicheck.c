/* tests/progs/direct_apicheck.c — apicheck linked against libcuda, so
 * "--via link" reaches the driver through plain symbol binding. */
#define APICHECK_LINK 1
#include "apicheck.c"

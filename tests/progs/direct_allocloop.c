/* tests/progs/direct_allocloop.c — allocloop linked against libcuda,
 * for "--via link" (plain symbol binding). */
#define ALLOCLOOP_LINK 1
#include "allocloop.c"

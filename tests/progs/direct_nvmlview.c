/* tests/progs/direct_nvmlview.c — nvmlview linked against the simulated
 * libcuda and libnvidia-ml, for "--via link" (plain symbol binding). */
#define NVMLVIEW_LINK 1
#include "nvmlview.c"

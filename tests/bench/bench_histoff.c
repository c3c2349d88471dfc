/*
 * tests/bench/bench_histoff.c — bench_hist's loop with the history's
 * hot-path code compiled out (GM_TW_HISTORY 0, see
 * shim/telemetry/telwrite.h): the baseline `make bench` subtracts.
 */
#define GM_TW_HISTORY 0
#define BENCH_NAME "bench_histoff"
#include "tests/bench/bench_hist.c"

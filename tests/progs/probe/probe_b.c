/*
 * tests/progs/probe/probe_b.c — second definition of gm_probe_value,
 * the answer RTLD_NEXT must give to probe_a.
 */
int gm_probe_value(void);

__attribute__((visibility("default"))) int gm_probe_value(void)
{
    return 2;
}

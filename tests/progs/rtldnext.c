/*
 * tests/progs/rtldnext.c — prints the value of the function that
 * dlsym(RTLD_NEXT, "gm_probe_value") finds when called from probe_a.
 * Linked against probe_a then probe_b, so the right answer is 2 with or
 * without a preloaded dlsym; 1 would mean glibc saw the wrong caller.
 */
#include <stdio.h>

void *gm_probe_next(void);

int main(void)
{
    int (*f)(void) = (int (*)(void))gm_probe_next();
    if (f == NULL) {
        printf("none\n");
        return 1;
    }
    printf("%d\n", f());
    return 0;
}

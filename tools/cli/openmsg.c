/*
 * tools/cli/openmsg.c — the one message a subcommand prints when a pid's
 * segment cannot be opened: "no gpumem process N" when there is no such
 * segment (with where to look), else the reader's own reason, which
 * already names the file (tools/lib/reader.h).
 */
#include <stdio.h>
#include <sys/stat.h>

#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

void gm_cli_open_failed(const char *cmd, const char *prefix, int pid,
                        const char *err)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s.%d", gm_tool_shm_dir(), prefix, pid);
    if (lstat(path, &st) != 0)
        fprintf(stderr, "gpumem: %s: no gpumem process %d (no segment %s); "
                "`gpumem ps --all` lists them\n", cmd, pid, path);
    else
        fprintf(stderr, "gpumem: %s: pid %d: %s\n", cmd, pid, err);
}

/*
 * shim/base/safefile.h — whole buffers: written to a descriptor, read at
 * an offset, and written to a file that another user may have prepared a
 * trap for (a report path in a shared directory).
 *
 * Invariant: the bytes reach the path only through a new file this
 * process created (O_EXCL, mode 0600, in the path's own directory) and
 * then renamed over the path: a symlink at the path is replaced, never
 * followed, and no other file is ever opened for writing.
 */
#ifndef GM_SAFEFILE_H
#define GM_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write all of buf[0..n) to fd, retrying short writes and EINTR.
 * Returns 0, or -1 (errno set) at the first failed write. */
int gm_write_all(int fd, const void *buf, size_t n);

/* Read n bytes at offset off, whole, retrying short reads and EINTR;
 * false on an error or end of file first (a file truncated meanwhile). */
bool gm_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* Write buf[0..n) as the whole content of `path`, replacing whatever was
 * there (file or symlink) atomically. Returns 0, or -1 with a message
 * naming the path and the reason in err. */
int gm_file_replace(const char *path, const void *buf, size_t n, char *err,
                    size_t cap);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs.h — file-system helpers: directories, whole-file reads, atomic replacement, and the
 * fault-injection points the reliability tests use.
 *
 * The one idea: a file another process may read is only ever created by writing a unique
 * temporary file in the same directory, fsync'ing it, renaming it over the final name and
 * fsync'ing the directory — so a reader sees the old bytes or the new, never a torn file,
 * and a crash at any instant leaves one or the other (plus, at worst, a temporary file that
 * gc collects).  Nothing here uses mmap: a file truncated under a reader must give an error,
 * not a SIGBUS.
 *
 * Callers: every part that touches files (the local store, bundles, specs, manifests,
 * guard profiles, toolkit memos); the reliability tests arm the fault points.
 */
#ifndef KC_FS_H
#define KC_FS_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/** File-system operations that can be made to fail. */
typedef enum kc_fs_op {
    KC_FS_OPEN = 0,
    KC_FS_WRITE,
    KC_FS_FSYNC,
    KC_FS_RENAME,
    KC_FS_UNLINK,
    KC_FS_READ,
    KC_FS_OP_COUNT
} kc_fs_op;

/**
 * Make the nth call of `op` from now fail with `err` (EIO, ENOSPC, EACCES, EROFS);
 * `every` keeps failing every call from then on.  nth == 0 turns it off.  For tests.
 */
void kc_fs_fault_set(kc_fs_op op, long nth, int err, bool every);
/** Turn off every injected fault. */
void kc_fs_fault_clear(void);
/** How many faults have been injected so far (all ops). */
long kc_fs_fault_count(void);
/** Kill this process (SIGKILL) at the nth kc_sys_* call from now, any op, before it runs: a crash
 *  at an exact step of a write path, for the crash tests.  nth == 0 turns it off. */
void kc_fs_crash_at(long nth);

/* Thin wrappers over the system calls, each a fault-injection point. */
int kc_sys_open(const char *path, int flags, mode_t mode);
/** openat(2) with O_CLOEXEC added; a fault point of KC_FS_OPEN, as kc_sys_open. */
int kc_sys_openat(int dirfd, const char *path, int flags, mode_t mode);
ssize_t kc_sys_write(int fd, const void *p, size_t n);
ssize_t kc_sys_read(int fd, void *p, size_t n);
int kc_sys_fsync(int fd);
int kc_sys_rename(const char *from, const char *to);
int kc_sys_unlink(const char *path);
/** syncfs(2) of the file system that holds open descriptor `fd` (every dirty file and folder on
 *  it); a fault point of KC_FS_FSYNC.  Where there is no syncfs, sync(2).  The local store's
 *  batches use it ([Note: batched puts] in store/local.c). */
int kc_sys_syncfs(int fd);

/** Create `path` and its missing parents with `mode`. */
int kc_fs_mkdirs(const char *path, mode_t mode);

/** Whether open descriptor `fd` is a regular file (0 for a FIFO, device, socket, or when
 *  fstat fails).  Open what is read with O_NONBLOCK, then check this before reading. */
int kc_fs_fd_is_regular(int fd);

/**
 * Read a whole regular file inside the cache directory (at most `max` bytes, else
 * KC_ECORRUPT).  KC_MISS if absent.  A symbolic link is refused (O_NOFOLLOW): nothing in
 * the cache is followed elsewhere.  Opened with O_NONBLOCK: a FIFO or device is refused
 * (KC_ECORRUPT), never waited on.  `*out` is freed with free(); `st` (may be NULL)
 * receives its fstat.  Callers: the local store, the cache's peek, records, guard
 * profiles, toolkit memos.
 */
int kc_fs_read_file(const char *path, size_t max, void **out, size_t *len, struct stat *st);

/** How kc_fs_read_file_at reads a file: its cap, a hint of its size, a buffer of the caller's. */
typedef struct kc_fs_read_how {
    size_t max;      /**< At most this many bytes, else KC_ECORRUPT. */
    size_t hint;     /**< The size the file had when last read; 0: none. */
    void *lent;      /**< The caller's buffer for the bytes (NULL: none)… */
    size_t lent_cap; /**< …of this many bytes. */
} kc_fs_read_how;

/**
 * kc_fs_read_file of `rel` under the open folder `dirfd` (AT_FDCWD: `rel` is `path`): a path
 * lookup of two names where `path` walks them all.  `path` is the same file's full name: errors
 * name it, and a file absent under `dirfd` is looked for there too (the folder held open may
 * have been moved or removed since).  Without `st`, no stat is made unless one is needed to say
 * what the file is, and a FIFO someone writes into is read as the file's bytes (at most
 * `how->max`): only for files inside the cache whose every byte is checked ([Note: the reader
 * without fstat]).  `how->hint`: one more byte than that is asked for, straight into a buffer with
 * room for a terminator too (no copy); a wrong hint costs a stat, or a buffer that was too big.  A
 * file of at most `lent_cap` - 2 bytes (and a hint as small) is read into `how->lent` and *out is
 * `lent` (nothing to free: a hit without an allocation), else *out is a buffer to free.
 * Callers: the local store's hits.
 */
int kc_fs_read_file_at(int dirfd, const char *rel, const char *path, const kc_fs_read_how *how, void **out, size_t *len,
                       struct stat *st);

/**
 * Read a whole regular file the user named (a spec, source, manifest, bundle, key file):
 * as kc_fs_read_file, but a symbolic link is followed (Bazel runfiles, Kubernetes secret
 * mounts are links).  Never use it for a path inside the cache directory.
 */
int kc_fs_read_input(const char *path, size_t max, void **out, size_t *len, struct stat *st);

/** KC_OK when `path` is a directory and not a symbolic link (lstat); KC_EIO naming it
 *  otherwise.  The local store checks every folder it writes into with this. */
int kc_fs_real_dir(const char *path);

/** opendir that never follows a symbolic link as the last part of `path` (NULL with errno
 *  ELOOP or ENOTDIR then).  Every folder inside the cache directory is read with this. */
DIR *kc_fs_opendir_nofollow(const char *path);

/**
 * Replace `path` atomically with `data`: a unique temporary file beside it (".tmp.*"),
 * write, fsync, rename, fsync of the directory.  On failure the temporary is removed and
 * the old file, if any, is untouched.
 */
int kc_fs_write_atomic(const char *path, const void *data, size_t len);
/** The same, the file created with `mode` (set before the rename: a reader never sees another). */
int kc_fs_write_atomic_mode(const char *path, const void *data, size_t len, unsigned mode);

/** Replace `path` with `data` through a temporary file and a rename, WITHOUT fsync: a reader sees
 *  the old bytes or the new, but a crash may lose the write (or, on some file systems, leave the
 *  file empty).  For many small files whose loss costs only work (site profiles); the caller
 *  fsyncs their folder once after all of them (kc_fs_sync_dir: the names, not the bytes). */
int kc_fs_write_replace(const char *path, const void *data, size_t len);
/** fsync the folder `dir` itself (its entries: the renames into it). */
int kc_fs_sync_dir(const char *dir);

/** Write all of `data` to an open descriptor (retrying short writes and EINTR). */
int kc_fs_write_all(int fd, const void *data, size_t len, const char *what);

/** fsync the directory that holds `path`. */
int kc_fs_fsync_parent(const char *path);

/** Whether a directory entry name is one of our temporary files. */
bool kc_fs_is_temp_name(const char *name);

/** Whether a file of stat `st` was last written and changed (mtime and ctime) before `before_ns`
 *  (ns since the epoch): a stat signature taken since then vouches for it ([Note: too new to vouch
 *  for] in compile/toolkit_direct.c; the spec direct mode and the layout memo use the same rule). */
bool kc_fs_settled(const struct stat *st, int64_t before_ns);

#endif

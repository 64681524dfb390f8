/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs.c — directories, whole-file reads, atomic replacement; every system call that can
 * lose data goes through a kc_sys_* wrapper that tests can make fail (SQLite's test_vfs).
 *
 * Callers: see fs.h.  Must not: mmap anything; leave a partly written file under a final name; follow a
 * failure with a half-done rename.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static struct {
    long countdown; /* 0 off */
    int err;
    int every;
} faults[KC_FS_OP_COUNT];
static long fault_total;

void kc_fs_fault_set(kc_fs_op op, long nth, int err, bool every) {
    __atomic_store_n(&faults[op].err, err, __ATOMIC_RELAXED);
    __atomic_store_n(&faults[op].every, every ? 1 : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&faults[op].countdown, nth, __ATOMIC_RELEASE);
}

void kc_fs_fault_clear(void) {
    for (int i = 0; i < KC_FS_OP_COUNT; i++) kc_fs_fault_set((kc_fs_op)i, 0, 0, false);
}

long kc_fs_fault_count(void) { return __atomic_load_n(&fault_total, __ATOMIC_RELAXED); }

static long crash_countdown; /* kc_fs_crash_at: 0 off */

void kc_fs_crash_at(long nth) { __atomic_store_n(&crash_countdown, nth, __ATOMIC_RELEASE); }

/* 0, or the errno to fail this call with. */
static int fault(kc_fs_op op) {
    if (__builtin_expect(__atomic_load_n(&crash_countdown, __ATOMIC_ACQUIRE) != 0, 0) &&
        __atomic_sub_fetch(&crash_countdown, 1, __ATOMIC_ACQ_REL) == 0)
        raise(SIGKILL);
    long c = __atomic_load_n(&faults[op].countdown, __ATOMIC_ACQUIRE);
    if (__builtin_expect(c == 0, 1)) return 0;
    /* One compare-and-swap per call, so calls from several threads (gc's removals) each see one
     * step: the nth fails, and with `every` each one after it (the countdown stays at 1). */
    while (c > 0) {
        int hit = c == 1;
        long next = hit && __atomic_load_n(&faults[op].every, __ATOMIC_RELAXED) ? 1 : c - 1;
        if (__atomic_compare_exchange_n(&faults[op].countdown, &c, next, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            if (!hit) return 0;
            __atomic_add_fetch(&fault_total, 1, __ATOMIC_RELAXED);
            return __atomic_load_n(&faults[op].err, __ATOMIC_RELAXED);
        }
    }
    return 0;
}

#define KC_FAULT(op)        \
    do {                    \
        int e_ = fault(op); \
        if (e_) {           \
            errno = e_;     \
            return -1;      \
        }                   \
    } while (0)

int kc_sys_open(const char *path, int flags, mode_t mode) {
    KC_FAULT(KC_FS_OPEN);
    return open(path, flags | O_CLOEXEC, mode);
}
int kc_sys_openat(int dirfd, const char *path, int flags, mode_t mode) {
    KC_FAULT(KC_FS_OPEN);
    return openat(dirfd, path, flags | O_CLOEXEC, mode);
}
ssize_t kc_sys_write(int fd, const void *p, size_t n) {
    KC_FAULT(KC_FS_WRITE);
    return write(fd, p, n);
}
ssize_t kc_sys_read(int fd, void *p, size_t n) {
    KC_FAULT(KC_FS_READ);
    return read(fd, p, n);
}
int kc_sys_fsync(int fd) {
    KC_FAULT(KC_FS_FSYNC);
    return fsync(fd);
}
int kc_sys_syncfs(int fd) {
    KC_FAULT(KC_FS_FSYNC);
#ifdef __linux__
    return syncfs(fd);
#else
    (void)fd;
    sync();
    return 0;
#endif
}
int kc_sys_rename(const char *from, const char *to) {
    KC_FAULT(KC_FS_RENAME);
    return rename(from, to);
}
int kc_sys_unlink(const char *path) {
    KC_FAULT(KC_FS_UNLINK);
    return unlink(path);
}

int kc_fs_mkdirs(const char *path, mode_t mode) {
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return kc_err(KC_EINVAL, "path too long or empty: '%s'", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, mode) != 0 && errno != EEXIST) return kc_err_errno(errno, "creating directory '%s'", tmp);
            *p = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0) return kc_err_errno(errno, "stat '%s'", path);
    if (!S_ISDIR(st.st_mode)) return kc_err(KC_EIO, "'%s' exists and is not a directory", path);
    return KC_OK;
}

int kc_fs_fd_is_regular(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

int kc_fs_real_dir(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return kc_err_errno(errno, "checking directory '%s'", path);
    if (S_ISLNK(st.st_mode))
        return kc_err(KC_EIO, "'%s' is a symbolic link; nothing inside the cache directory is followed", path);
    if (!S_ISDIR(st.st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", path);
    return KC_OK;
}

DIR *kc_fs_opendir_nofollow(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* The open file's stat, when it is a regular file of at most `max` bytes; else the error that says so. */
static int stat_fits(int fd, const char *path, size_t max, struct stat *st) {
    if (fstat(fd, st) != 0) return kc_err_errno(errno, "fstat '%s'", path);
    if (!S_ISREG(st->st_mode)) return kc_err(KC_ECORRUPT, "'%s' is not a regular file", path);
    if ((uint64_t)st->st_size > max)
        return kc_err(KC_ECORRUPT, "'%s' is %lld bytes, over the cap of %zu", path, (long long)st->st_size, max);
    return KC_OK;
}

/* The one reader: `nofollow` refuses a symbolic link as the last part of `path` (files inside
 * the cache); without it a link the user named is followed (inputs). */
static int read_fd(int fd, const char *path, size_t max, void **out, size_t *len, struct stat *st_out);
static int read_rest(int fd, const char *path, size_t max, uint8_t **buf, size_t *got, struct stat *st_out);

static int read_file(const char *path, size_t max, void **out, size_t *len, struct stat *st_out, bool nofollow) {
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer forever; the type is
     * checked before the first read (a regular file ignores the flag). */
    int fd = kc_sys_open(path, O_RDONLY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0), 0);
    if (fd < 0) {
        if (errno == ENOENT) return KC_MISS;
        return kc_err_errno(errno, "opening '%s'", path);
    }
    return read_fd(fd, path, max, out, len, st_out);
}

/* The whole of open file `fd` (`path`), sized by its stat, into *out; closes fd. */
static int read_fd(int fd, const char *path, size_t max, void **out, size_t *len, struct stat *st_out) {
    uint8_t *buf = NULL;
    size_t got = 0;
    int rc = read_rest(fd, path, max, &buf, &got, st_out);
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = got;
    return KC_OK;
}

/*
 * [Note: the reader without fstat] A hit reads two files, and a fstat per file was a sixth of a
 * warm in-process hit over its floor.  kc_fs_read_file_at without `st` (the local store's hits
 * only) reads a file inside the cache without one: one read of up to READ_FIRST bytes (or the
 * size its caller lends, or one more than the size it last had), and a read shorter than asked is
 * the end of a regular file (read(2) returns less only at the end, or on a
 * signal that kills us).  What that cannot tell apart goes to the reader with a stat, which
 * states it as before: nothing read (an empty file, a FIFO with no writer), EISDIR or EAGAIN (a
 * folder, a FIFO), and a first read that filled the buffer (the file's size, and the cap, come
 * from its fstat: a file over the first read costs that stat and a second read).  A FIFO that someone
 * writes into is read as the entry's bytes, at most `max` of them, and the decoder refuses them
 * (every byte is checked); only the cache's owner can make one there (safedir.c), and another
 * user's cache is read with a stat (local.c).  Every other reader (kc_fs_read_file, whatever
 * the path names: keys, credentials, memos) keeps the stat and refuses any file not regular.
 */
enum { READ_FIRST = 16 * 1024 };


int kc_fs_read_file(const char *path, size_t max, void **out, size_t *len, struct stat *st) {
    return read_file(path, max, out, len, st, true);
}

/* `rel` under `dirfd` opened for reading, else `path` when it is absent there: a descriptor, or
 * -1 with errno. */
static int open_at(int dirfd, const char *rel, const char *path) {
    int fd = kc_sys_openat(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0);
    if (fd < 0 && errno == ENOENT && dirfd != AT_FDCWD) /* the folder held open was moved or removed */
        fd = kc_sys_open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0);
    return fd;
}

/* The first read of a file without a stat, into the lent buffer (room for a terminator kept: a file
 * that fits stays there, no allocation) or, with a hint of its size too big for that, straight into a
 * buffer of `hint` + 2 bytes; a first read that filled the lent buffer is copied into one of its own.
 * Needs a lent buffer or a hint.  *got its bytes, *cap what was asked.  KC_OK, KC_MISS (nothing read:
 * read_file says what it is), or the read's error.  *buf is the lent buffer, or one to free. */
static int read_first(int fd, const char *path, const kc_fs_read_how *how, uint8_t **buf, size_t *got, size_t *cap) {
    size_t max = how->max, hint = how->hint, lent_cap = how->lent ? how->lent_cap : 0;
    uint8_t *lent = lent_cap >= 2 ? how->lent : NULL, *into = lent;
    if (hint && (!lent || hint + 2 > lent_cap)) { /* straight into a buffer of its size */
        *cap = hint < max ? hint + 1 : max + 1;
        into = *buf = kc_malloc(*cap + 1);
        if (!into) return kc_err(KC_ENOMEM, "reading '%s': out of memory", path);
    } else {
        *cap = max < lent_cap - 1 ? max + 1 : lent_cap - 1;
    }
    ssize_t r;
    while ((r = kc_sys_read(fd, into, *cap)) < 0 && errno == EINTR) {}
    *got = r > 0 ? (size_t)r : 0;
    if (r < 0 && errno != EISDIR && errno != EAGAIN && errno != EWOULDBLOCK)
        return kc_err_errno(errno, "reading '%s'", path);
    if (*got == 0) return KC_MISS;
    if (into == *buf) return KC_OK;
    if (*got < *cap) { /* the whole file, in the lent buffer */
        *buf = lent;
        return KC_OK;
    }
    if ((*buf = kc_malloc(*got + 1))) memcpy(*buf, into, *got);
    return *buf ? KC_OK : kc_err(KC_ENOMEM, "reading '%s': out of memory", path);
}

/* read_first with neither a lent buffer nor a hint: onto the stack, copied once into a buffer of the
 * bytes' size.  Its own frame (not inlined), which a hit that lends a buffer never has on its stack. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int
read_first_onto_stack(int fd, const char *path, const kc_fs_read_how *how, uint8_t **buf, size_t *got, size_t *cap) {
    uint8_t first[READ_FIRST + 1];
    kc_fs_read_how own = {how->max, 0, first, sizeof first};
    int rc = read_first(fd, path, &own, buf, got, cap);
    if (rc != KC_OK || *buf != first) return rc;
    if (!(*buf = kc_malloc(*got + 1))) return kc_err(KC_ENOMEM, "reading '%s': out of memory", path);
    memcpy(*buf, first, *got);
    return KC_OK;
}

int kc_fs_read_file_at(int dirfd, const char *rel, const char *path, const kc_fs_read_how *how, void **out, size_t *len,
                       struct stat *st) {
    size_t max = how->max;
    void *lent = how->lent;
    *out = NULL;
    *len = 0;
    int fd = open_at(dirfd, rel, path);
    if (fd < 0) return errno == ENOENT ? KC_MISS : kc_err_errno(errno, "opening '%s'", path);
    if (st) return read_fd(fd, path, max, out, len, st);
    uint8_t *buf = NULL;
    size_t got, cap;
    bool lends = how->lent && how->lent_cap >= 2; /* read_first needs a lent buffer or a hint */
    int rc = lends || how->hint ? read_first(fd, path, how, &buf, &got, &cap)
                                : read_first_onto_stack(fd, path, how, &buf, &got, &cap);
    if (rc == KC_OK && got == cap) rc = read_rest(fd, path, max, &buf, &got, NULL); /* never the lent buffer */
    close(fd);
    if (buf == lent) buf = NULL; /* not ours to free */
    if (rc == KC_MISS) {         /* the kinds of file read_file names: empty, a FIFO, a folder */
        free(buf);
        return read_file(path, max, out, len, NULL, true);
    }
    if (rc == KC_OK && got > max) /* read past the cap: the file grew, or shrank after its bytes were read */
        rc = kc_err(KC_ECORRUPT, "'%s' is over the cap of %zu bytes", path, max);
    if (rc != KC_OK) {
        free(buf);
        return rc;
    }
    *out = buf ? buf : lent;
    *len = got;
    return KC_OK;
}

/* The rest of a file, sized by its stat (st_out: a copy, may be NULL), after the *got bytes already in
 * *buf (NULL: none yet); *buf always has room for one byte more than it holds. */
static int read_rest(int fd, const char *path, size_t max, uint8_t **buf, size_t *got, struct stat *st_out) {
    struct stat st;
    int rc = stat_fits(fd, path, max, &st);
    if (rc) return rc;
    if (st_out) *st_out = st;
    size_t size = (size_t)st.st_size;
    if (*buf && size <= *got) return KC_OK; /* shrank under us: the decoder will see the short length */
    uint8_t *bigger = kc_realloc(*buf, (size > *got ? size : *got) + 1);
    if (!bigger) return kc_err(KC_ENOMEM, "reading '%s': out of memory", path);
    *buf = bigger;
    while (*got < size) {
        ssize_t r = kc_sys_read(fd, bigger + *got, size - *got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return kc_err_errno(errno, "reading '%s'", path);
        if (r == 0) break; /* shrank under us */
        *got += (size_t)r;
    }
    return KC_OK;
}

int kc_fs_read_input(const char *path, size_t max, void **out, size_t *len, struct stat *st) {
    return read_file(path, max, out, len, st, false);
}

int kc_fs_write_all(int fd, const void *data, size_t len, const char *what) {
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t w = kc_sys_write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return kc_err_errno(errno, "writing '%s'", what);
        }
        p += w;
        len -= (size_t)w;
    }
    return KC_OK;
}

int kc_fs_fsync_parent(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash != path ? slash - path : 1), path);
    int fd = kc_sys_open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) return kc_err_errno(errno, "opening directory '%s'", dir);
    int rc = kc_sys_fsync(fd);
    int e = errno;
    close(fd);
    return rc == 0 ? KC_OK : kc_err_errno(e, "fsync of directory '%s'", dir);
}

bool kc_fs_is_temp_name(const char *name) { return strncmp(name, ".tmp.", 5) == 0; }

bool kc_fs_settled(const struct stat *st, int64_t before_ns) {
    int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
    return m < before_ns && c < before_ns;
}

int kc_fs_write_replace(const char *path, const void *data, size_t len) {
    static unsigned long seq;
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    unsigned long s = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    int n = snprintf(tmp, sizeof tmp, "%.*s%s.tmp.%s.%ld.%lx.r", dlen, path, slash ? "/" : "", base, (long)getpid(), s);
    if (n < 0 || (size_t)n >= sizeof tmp) return kc_err(KC_EINVAL, "path too long: '%s'", path);
    int fd = kc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return kc_err_errno(errno, "creating '%s'", tmp);
    int rc = kc_fs_write_all(fd, data, len, tmp);
    if (close(fd) != 0 && rc == KC_OK) rc = kc_err_errno(errno, "closing '%s'", tmp);
    if (rc == KC_OK && kc_sys_rename(tmp, path) != 0) rc = kc_err_errno(errno, "renaming '%s' to '%s'", tmp, path);
    if (rc != KC_OK) unlink(tmp);
    return rc;
}

int kc_fs_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return kc_err_errno(errno, "opening '%s'", dir);
    int rc = kc_sys_fsync(fd) == 0 ? KC_OK : kc_err_errno(errno, "fsync of '%s'", dir);
    close(fd);
    return rc;
}

int kc_fs_write_atomic(const char *path, const void *data, size_t len) {
    return kc_fs_write_atomic_mode(path, data, len, 0600);
}

int kc_fs_write_atomic_mode(const char *path, const void *data, size_t len, unsigned mode) {
    static unsigned long seq;
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    unsigned long s = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    int n = snprintf(tmp, sizeof tmp, "%.*s%s.tmp.%s.%ld.%lx.%lx", dlen, path, slash ? "/" : "", base, (long)getpid(),
                     s, (unsigned long)(kc_mono_ns() & 0xffffffu));
    if (n < 0 || (size_t)n >= sizeof tmp) return kc_err(KC_EINVAL, "path too long: '%s'", path);
    int fd = kc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return kc_err_errno(errno, "creating '%s'", tmp);
    int rc = kc_fs_write_all(fd, data, len, tmp);
    if (rc == KC_OK && mode != 0600 && fchmod(fd, (mode_t)mode) != 0) rc = kc_err_errno(errno, "chmod of '%s'", tmp);
    if (rc == KC_OK && kc_sys_fsync(fd) != 0) rc = kc_err_errno(errno, "fsync of '%s'", tmp);
    if (close(fd) != 0 && rc == KC_OK) rc = kc_err_errno(errno, "closing '%s'", tmp);
    if (rc == KC_OK && kc_sys_rename(tmp, path) != 0) rc = kc_err_errno(errno, "renaming '%s' to '%s'", tmp, path);
    if (rc != KC_OK) {
        unlink(tmp); /* not a fault point: cleanup must not be made to fail */
        return rc;
    }
    /* The rename is done and visible; a failed directory fsync loses durability only. */
    rc = kc_fs_fsync_parent(path);
    if (rc != KC_OK) kc_log(KC_LOG_STORE, "%s", kc_error_last()->message);
    return KC_OK;
}

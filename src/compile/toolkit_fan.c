/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit_fan.c — which of the toolkit's files this process opened, told apart from the opens of
 * every other process (toolkit_fan.h).
 *
 * [Note: only our own reads] A compile's watch ([Note: toolkit direct mode] in toolkit.h) learns
 * from inotify which files of the tree were opened while it ran; inotify cannot tell by whom.  A
 * superset is harmless to correctness but not to speed: a process that hashed the whole tree
 * while another compiled (the first use of a toolkit by another cache, a second build on the same
 * host) put all of its 1,982 files in that compile's manifest where the kernel read 38, and every
 * later process of that graph stat'ed them all.  fanotify reports the
 * same opens with the opener's process (an unprivileged listener sees its own process's id and 0
 * for any other), so the watch also marks each folder with fanotify and keeps, of the files
 * inotify saw, those this process opened.  The inotify record stays the authority: a file is
 * kept only when both saw it, and any doubt about fanotify (not available, a folder it cannot
 * mark or name, a queue overflow, an event of a folder not marked, a file it saw that inotify did
 * not, a forked child) drops the filter, and the record is then every open either saw (inotify's
 * whole record, as before, and those fanotify credited to this process until then).  Both are fed
 * by the same hook of the kernel, before the opener's open() returns, so an open of this process
 * that inotify saw, fanotify saw too.  It rests on NVRTC
 * compiling in this process (any of its threads: the id reported is the process's, never a
 * thread's — FAN_REPORT_TID is never asked for); a compile run by another process would have its
 * reads dropped, so none may run under a watch with this filter on.
 *
 * Must not: decide what is recorded (toolkit_direct.c does), or keep a descriptor an event hands
 * over (with file ids, none is).
 */
#include "toolkit_fan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../common/internal.h"

#ifndef MAX_HANDLE_SZ
#define MAX_HANDLE_SZ 128
#endif

typedef struct dir_id { /* a folder as fanotify names it: its file system and file handle */
    int fsid[2];
    int type;
    unsigned bytes;
    unsigned char handle[MAX_HANDLE_SZ];
} dir_id;

struct kc_tk_fan {
    int fd;
    pid_t pid; /* the process that opened the watch: its opens only */
    size_t n;
    dir_id *dirs;
};

static int enabled = 1;
void kc_tk_fan_enable_(int on) { __atomic_store_n(&enabled, on, __ATOMIC_RELAXED); }

/* Folder `path`'s id into *d, and a mark on it for the opens of the files in it: 0 on success. */
static int mark_dir(int fd, const char *path, dir_id *d) {
    union {
        struct file_handle fh;
        unsigned char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    } h;
    struct statfs sf;
    int mount_id;
    h.fh.handle_bytes = MAX_HANDLE_SZ;
    if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) != 0 || h.fh.handle_bytes > MAX_HANDLE_SZ ||
        statfs(path, &sf) != 0)
        return -1;
    memcpy(d->fsid, &sf.f_fsid, sizeof d->fsid);
    d->type = h.fh.handle_type;
    d->bytes = h.fh.handle_bytes;
    memcpy(d->handle, h.fh.f_handle, d->bytes);
    return fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN | FAN_EVENT_ON_CHILD, AT_FDCWD, path);
}

/* Whether no two folders have one name (file system id and handle): two file systems of one id
 * (cloned images) could give two roots one handle, and an open in one be taken for the other's. */
static int distinct(const kc_tk_fan *f) {
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = i + 1; j < f->n; j++) {
            const dir_id *a = &f->dirs[i], *b = &f->dirs[j];
            if (a->type == b->type && a->bytes == b->bytes && !memcmp(a->handle, b->handle, a->bytes)) return 0;
        }
    return 1;
}

kc_tk_fan *kc_tk_fan_open(size_t n, int (*path)(void *ctx, size_t i, char *out, size_t cap), void *ctx) {
    if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED) || n == 0) return NULL;
    kc_tk_fan *f = kc_calloc(1, sizeof *f);
    if (!f || !(f->dirs = kc_calloc(n, sizeof *f->dirs))) {
        free(f);
        return NULL;
    }
    f->n = n, f->pid = getpid();
    f->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY);
    char p[4096] = "fanotify_init";
    const char *why = f->fd < 0 ? strerror(errno) : NULL;
    for (size_t i = 0; !why && i < n; i++) {
        if (path(ctx, i, p, sizeof p) != 0) why = "a path too long";
        else if (mark_dir(f->fd, p, &f->dirs[i]) != 0) why = strerror(errno);
    }
    if (!why && !distinct(f)) {
        snprintf(p, sizeof p, "%s", "the tree");
        why = "two folders of one name";
    }
    if (why) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: every process's opens count (fanotify: %s: %s)", p, why);
        kc_tk_fan_close(f);
        return NULL;
    }
    return f;
}

void kc_tk_fan_close(kc_tk_fan *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    free(f->dirs);
    free(f);
}

/* The folder of an event's directory id (fsid, then a struct file_handle) of `len` bytes, and the
 * name after it: the folder's index, -1 when it is not one marked or the record is not whole. */
static long event_dir(const kc_tk_fan *f, const unsigned char *rec, size_t len, const char **name) {
    struct fanotify_event_info_fid fid;
    struct file_handle fh;
    if (len < sizeof fid + sizeof fh) return -1;
    memcpy(&fid, rec, sizeof fid);
    memcpy(&fh, rec + sizeof fid, sizeof fh);
    size_t at = sizeof fid + sizeof fh;
    if (fh.handle_bytes > MAX_HANDLE_SZ || fh.handle_bytes >= len - at) return -1;
    const unsigned char *bytes = rec + at;
    const char *nm = (const char *)rec + at + fh.handle_bytes;
    if (!memchr(nm, '\0', len - at - fh.handle_bytes) || !nm[0]) return -1;
    for (size_t i = 0; i < f->n; i++) {
        const dir_id *d = &f->dirs[i];
        if (d->bytes == fh.handle_bytes && d->type == fh.handle_type && !memcmp(d->fsid, &fid.fsid, sizeof d->fsid) &&
            !memcmp(d->handle, bytes, d->bytes)) {
            *name = nm;
            return (long)i;
        }
    }
    return -1;
}

/* One event (`len` bytes from its metadata): 1 when taken (or not this process's), 0 when the opens
 * cannot be known whole. */
static int one_event(const kc_tk_fan *f, const unsigned char *ev, size_t len,
                     int (*on_open)(void *ctx, size_t dir, const char *name), void *ctx) {
    struct fanotify_event_metadata m;
    memcpy(&m, ev, sizeof m);
    if (m.vers != FANOTIFY_METADATA_VERSION || (m.mask & FAN_Q_OVERFLOW) || m.metadata_len < sizeof m ||
        m.metadata_len > len)
        return 0;
    if (m.fd >= 0) close(m.fd);                                                    /* none with file ids; never kept */
    if (m.pid != f->pid || (m.mask & FAN_ONDIR) || !(m.mask & FAN_OPEN)) return 1; /* not a file we opened */
    for (size_t at = m.metadata_len; at + sizeof(struct fanotify_event_info_header) <= len;) {
        struct fanotify_event_info_header h;
        memcpy(&h, ev + at, sizeof h);
        if (h.len < sizeof h || h.len > len - at) return 0;
        if (h.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
            const char *name = NULL;
            long dir = event_dir(f, ev + at, h.len, &name);
            return dir >= 0 && on_open(ctx, (size_t)dir, name);
        }
        at += h.len;
    }
    return 0; /* an open of ours without its folder and name */
}

int kc_tk_fan_drain(kc_tk_fan *f, int (*on_open)(void *ctx, size_t dir, const char *name), void *ctx) {
    if (getpid() != f->pid) return 0; /* a forked child: its opens are not the ones marked */
    _Alignas(struct fanotify_event_metadata) unsigned char buf[16384];
    for (;;) {
        ssize_t r = read(f->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return 1;
        if (r <= 0) return 0;
        for (size_t at = 0; at < (size_t)r;) {
            struct fanotify_event_metadata m;
            if ((size_t)r - at < sizeof m) return 0;
            memcpy(&m, buf + at, sizeof m);
            if (m.event_len < sizeof m || m.event_len > (size_t)r - at) return 0;
            if (!one_event(f, buf + at, m.event_len, on_open, ctx)) return 0;
            at += m.event_len;
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_layout.c — the cache's folders: v1/, its shards, quarantine/, toolkits/ and profiles/,
 * made when first written and never followed when they are links ([Note: no links inside]), and
 * the check at open that v1/ holds real folders only, vouched for by a memo when v1/ is unchanged
 * ([Note: the layout vouched]).
 *
 * Callers: local.c (open, put, remove, quarantine), local_batch.c, the toolkit and profile
 * memos through local.h.  Must not: follow a link below the cache directory, or vouch for a v1/
 * changed since (or within KC_LAYOUT_SETTLE_NS before) its folders were read.
 */
#include "local_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"

/* [Note: no links inside] The cache directory itself is checked at open (safedir.c); below
 * it nothing is followed: v1/, a shard or quarantine/ replaced by a symbolic link would send
 * writes (and gc's removals) outside the cache.  So every folder is lstat'ed before it is
 * written into — v1/ and the folder (`sub`: a shard "xx" or "quarantine") — and a link is
 * refused (KC_EIO, naming it); files in them are opened O_NOFOLLOW or replaced by rename. */
static int real_dirs(const kc_local *l, const char *sub) {
    char p[PATH_MAX];
    int rc = kc_fs_real_dir(l->v1);
    if (rc == KC_OK && sub) {
        snprintf(p, sizeof p, "%s/%s", l->v1, sub);
        rc = kc_fs_real_dir(p);
    }
    return rc;
}

/* v1/ and `dir` (when it exists) must be real folders: [Note: no links inside]. */
int kc_local_real_sub_dir_(const kc_local *l, const char *dir) {
    int rc = real_dirs(l, NULL);
    struct stat st;
    if (rc == KC_OK && lstat(dir, &st) == 0) rc = kc_fs_real_dir(dir);
    return rc;
}

int kc_local_toolkit_dir(const kc_local *l, bool write, char *out, size_t cap) {
    if (write && l->readonly)
        return kc_err(KC_EREADONLY, "the cache '%s' is read-only: no toolkit memo is written", l->root);
    int n = snprintf(out, cap, "%s/toolkits", l->v1);
    if (n < 0 || (size_t)n >= cap)
        return kc_err(KC_EINVAL, "the toolkit memo folder of '%s' does not fit in %zu bytes", l->root, cap);
    return kc_local_real_sub_dir_(l, out);
}

int kc_local_profile_dir(const kc_local *l, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/profiles", l->v1);
    if (n < 0 || (size_t)n >= cap)
        return kc_err(KC_EINVAL, "the profile folder of '%s' does not fit in %zu bytes", l->root, cap);
    return kc_local_real_sub_dir_(l, out);
}

/*
 * [Note: shards made when written] Opening a cache made its 256 shard folders and quarantine/
 * every time: 257 mkdir calls per process, all failing with EEXIST once the cache exists — most
 * of what opening cost.  Now they are made with v1/ (a new cache gets them all, once in its
 * life), and a write (a put, a compile lock, a stats file, a quarantine) makes its folder when
 * it is missing — a cache whose shards someone removed, or one v1/ of which another part made
 * first.  Opening an existing cache makes nothing: it reads v1/ once to refuse a shard or
 * quarantine/ that is not a real folder, unless the layout memo vouches for v1/ as it is ([Note:
 * the layout vouched]).  Made or found, a folder written into is checked as
 * before: a real directory, never a link planted in its place ([Note: no links inside]); readers
 * (get, iterate, gc, verify, stats) take a missing shard as an empty one.
 */
int kc_local_make_sub_(const kc_local *l, const char *sub) {
    char p[PATH_MAX];
    int rc = kc_fs_real_dir(l->v1);
    if (rc != KC_OK) return rc;
    snprintf(p, sizeof p, "%s/%s", l->v1, sub);
    struct stat st;
    if (lstat(p, &st) != 0) {
        if (errno != ENOENT) return kc_local_err_errno_(errno, 0, "checking directory '%s'", p);
        if (mkdir(p, 0700) != 0 && errno != EEXIST) return kc_local_err_errno_(errno, 1, "creating '%s'", p);
    }
    return kc_fs_real_dir(p);
}

/* At open, every shard and quarantine/ that exists is a real folder: one read of v1/ (its
 * entries' types), not a call per shard.  A link or a file in their place is refused as
 * kc_fs_real_dir refuses it. */
static int subs_are_dirs(const kc_local *l, struct stat *read) {
    DIR *d = kc_fs_opendir_nofollow(l->v1);
    if (!d) return kc_local_err_errno_(errno, 0, "reading directory '%s'", l->v1);
    int rc = KC_OK;
    if (fstat(dirfd(d), read) != 0) read->st_ino = 0; /* the folder read: the memo vouches for it only */
    struct dirent *de;
    while (rc == KC_OK && (de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        bool shard = strlen(n) == 2 && strspn(n, "0123456789abcdef") == 2;
        if (!shard && strcmp(n, "quarantine") != 0) continue;
        if (de->d_type == DT_DIR) continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", l->v1, n);
        rc = kc_fs_real_dir(p); /* DT_UNKNOWN (some file systems): lstat decides */
    }
    closedir(d);
    return rc;
}

/* The shard of `name`, made when missing: for a write into it. */
int kc_local_real_shard_(const kc_local *l, const char *name) {
    char sub[3] = {name[0], name[1], '\0'};
    return kc_local_make_sub_(l, sub);
}

/*
 * [Note: the layout vouched] Reading v1/ at open to refuse a link in a shard's place cost a warm
 * process ~0.15 ms (262 entries: getdents on ext4 builds a tree of the names, and closing the
 * folder frees it), a tenth of a bundled warm start over its floor, to find what it found last
 * time.  A folder's mtime and ctime change whenever an entry directly in it is added, removed or
 * renamed, and a shard cannot become a link without one of those.  So after a read of v1/ found
 * real folders only, an empty file toolkits/layout1-<hash> records it, the hash being that of
 * v1/'s stat (device, inode, mode, owner, links, size, mtime, ctime) taken before the read; a
 * later open whose v1/ has the same stat, and finds that file ours, takes the read as done.
 *  - Too new to vouch for (as [Note: too new to vouch for] in compile/toolkit_direct.c): a change
 *    within the same tick of the file system's clock would keep the stat, so no memo is written
 *    for a v1/ changed less than KC_LAYOUT_SETTLE_NS before the read began — by this host's
 *    clock, and by the file system's own: a file made in toolkits/ just before the read, whose
 *    mtime is then "now" as the file system stamps it, becomes the memo by a rename.
 *  - Local file systems only (ext4, xfs, btrfs, tmpfs, zfs, f2fs): on NFS, SMB or FUSE the stamps
 *    are a server's and a stat may be a cached copy, and an overlay's folder has its upper layer's
 *    stat while its entries may come from a lower layer changed unseen; those read v1/ every time.
 *  - Only where no one else may write: never for a cache opened with KCACHE_ALLOW_UNSAFE_DIR or
 *    another user's, nor while v1/ or toolkits/ is writable by group or others or toolkits/ is not
 *    ours; the memo must be ours with one link; never for a read-only handle (which reads nothing
 *    here at all, as before).
 *  - The folder read must be the folder whose stat is vouched for (device and inode).
 * The memo lives in toolkits/ (opened O_NOFOLLOW; writing in it changes v1/'s stat not at all);
 * the memos of other stats are removed when a new one is written, and so are probes left by a
 * process that died (older than a minute).  A process that waited long between its stat and its
 * memo may remove the memo of a newer stat: the next open reads v1/ and writes it again.  Writing
 * v1/record (by a rename in v1/) changes v1/'s stat: the open after it reads v1/ again.  Writes, gc
 * and the walks still refuse a linked folder each time they use it: this check is the early refusal.
 */
#define KC_LAYOUT_SETTLE_NS 2000000000LL
static int64_t layout_settle_ns = KC_LAYOUT_SETTLE_NS;
void kc_local_layout_settle_set_(int64_t ns) { layout_settle_ns = ns < 0 ? KC_LAYOUT_SETTLE_NS : ns; }
static int layout_reads; /* full reads of v1/ at open, for the tests */
int kc_local_layout_reads_(void) { return __atomic_load_n(&layout_reads, __ATOMIC_RELAXED); }

#define LAYOUT_PREFIX "layout1-"

/* "layout1-<hash of v1's stat>" into out[32]. */
static void layout_memo_name(const struct stat *st, char out[32]) {
    int64_t f[10] = {(int64_t)st->st_dev,         (int64_t)st->st_ino,          (int64_t)st->st_mode,
                     (int64_t)st->st_uid,         (int64_t)st->st_nlink,        (int64_t)st->st_size,
                     (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec, (int64_t)st->st_ctim.tv_sec,
                     (int64_t)st->st_ctim.tv_nsec};
    snprintf(out, 32, LAYOUT_PREFIX "%016llx", (unsigned long long)XXH3_64bits(f, sizeof f));
}

static bool layout_settled(const struct stat *st, int64_t now_ns) {
    return kc_fs_settled(st, now_ns - layout_settle_ns);
}

/* Whether v1/ is on a file system whose stamps and stats the memo may trust. */
bool kc_local_layout_fs_(const char *v1) {
    struct statfs sf;
    if (statfs(v1, &sf) != 0) return false;
    switch ((uint32_t)sf.f_type) {
    case 0xEF53u:     /* ext2, ext3, ext4 */
    case 0x58465342u: /* xfs */
    case 0x9123683Eu: /* btrfs */
    case 0x01021994u: /* tmpfs */
    case 0x2FC12FC1u: /* zfs */
    case 0xF2F52010u: /* f2fs */ return true;
    default: return false;
    }
}

/* Whether v1/ (stat `st`) and toolkits/ (`ts`) may hold a memo: ours, writable by us alone. */
static bool layout_private(const struct stat *st, const struct stat *ts) {
    uid_t me = geteuid();
    return S_ISDIR(ts->st_mode) && ts->st_uid == me && st->st_uid == me && ts->st_dev == st->st_dev &&
           !((st->st_mode | ts->st_mode) & (S_IWGRP | S_IWOTH));
}

/* Whether toolkits/ is a real folder of ours holding our memo of `st`. */
static bool layout_vouched(const kc_local *l, const struct stat *st) {
    char p[PATH_MAX], name[32];
    struct stat ts, ms;
    layout_memo_name(st, name);
    int n = snprintf(p, sizeof p, "%s/toolkits", l->v1);
    if (n < 0 || (size_t)n + 33 >= sizeof p || lstat(p, &ts) != 0 || !layout_private(st, &ts)) return false;
    snprintf(p + n, sizeof p - (size_t)n, "/%s", name);
    return lstat(p, &ms) == 0 && S_ISREG(ms.st_mode) && ms.st_uid == geteuid() && ms.st_nlink == 1;
}

/* The memo to be: toolkits/ held open (-1 when missing or not a real folder), a new file made in it
 * (tmp), and its stat (the file system's "now"). */
typedef struct layout_probe {
    int dfd;
    char tmp[64];
    struct stat st;
} layout_probe;

#define PROBE_PREFIX "layout1.tmp-"
#define PROBE_STALE_S 60 /* a probe this old is a dead process's */

static void probe_begin(const kc_local *l, const struct stat *st, layout_probe *p) {
    char toolkits[PATH_MAX];
    static unsigned count;
    unsigned n = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
    uint64_t salt = kc_now_ns() ^ ((uint64_t)getpid() << 32); /* pids repeat across containers */
    snprintf(toolkits, sizeof toolkits, "%s/toolkits", l->v1);
    snprintf(p->tmp, sizeof p->tmp, PROBE_PREFIX "%ld-%u-%016llx", (long)getpid(), n, (unsigned long long)salt);
    p->dfd = open(toolkits, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* made by a write, not here */
    struct stat ts;
    if (p->dfd >= 0 && (fstat(p->dfd, &ts) != 0 || !layout_private(st, &ts))) {
        close(p->dfd);
        p->dfd = -1;
    }
    if (p->dfd < 0) return;
    int fd = openat(p->dfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && fstat(fd, &p->st) == 0;
    if (fd >= 0) close(fd);
    if (!ok) {
        if (fd >= 0) (void)unlinkat(p->dfd, p->tmp, 0);
        close(p->dfd);
        p->dfd = -1;
    }
}

/* Remove from toolkits/ every memo but `keep` (of any version: "layout…") and the probes of dead
 * processes. */
static void layout_retire(int dfd, const char *keep) {
    DIR *d = fdopendir(dfd); /* takes the descriptor */
    if (!d) {
        close(dfd);
        return;
    }
    int64_t now = (int64_t)(kc_now_ns() / 1000000000u);
    struct stat ps;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, "layout", 6) != 0 || strcmp(de->d_name, keep) == 0) continue;
        bool probe = !strncmp(de->d_name, PROBE_PREFIX, sizeof PROBE_PREFIX - 1);
        if (probe && (fstatat(dirfd(d), de->d_name, &ps, AT_SYMLINK_NOFOLLOW) != 0 ||
                      (int64_t)ps.st_mtime > now - PROBE_STALE_S))
            continue; /* another process's, in flight */
        (void)unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

/* After the read of the folder `read` (`found_real`): the probe becomes the memo of `st` when that
 * folder is v1/ with stat `st` and had settled by the file system's clock too, and the other memos
 * go; else it is removed. */
static void probe_end(layout_probe *p, const struct stat *st, const struct stat *read, bool found_real) {
    if (p->dfd < 0) return;
    char name[32];
    layout_memo_name(st, name);
    int64_t fs_now = (int64_t)p->st.st_mtim.tv_sec * 1000000000LL + p->st.st_mtim.tv_nsec;
    bool same = read->st_dev == st->st_dev && read->st_ino == st->st_ino;
    if (!found_real || !same || !layout_settled(st, fs_now) || renameat(p->dfd, p->tmp, p->dfd, name) != 0) {
        (void)unlinkat(p->dfd, p->tmp, 0);
        close(p->dfd);
        return;
    }
    layout_retire(p->dfd, name);
}

/* v1/ (its stat in *st) holds real folders only: vouched for by the memo (`memo`: allowed here), or
 * read, and then vouched for when it had settled. */
static int layout_checked(kc_local *l, const struct stat *st, bool memo) {
    memo = memo && kc_local_layout_fs_(l->v1);
    if (memo && layout_vouched(l, st)) return KC_OK;
    layout_probe p = {.dfd = -1};
    if (memo && layout_settled(st, (int64_t)kc_now_ns())) probe_begin(l, st, &p); /* before the read */
    __atomic_add_fetch(&layout_reads, 1, __ATOMIC_RELAXED);
    struct stat read = {0};
    int rc = subs_are_dirs(l, &read);
    probe_end(&p, st, &read, rc == KC_OK);
    return rc;
}

int kc_local_make_layout_(kc_local *l, bool memo) {
    bool made = mkdir(l->v1, 0700) == 0;
    int rc = KC_OK;
    if (!made && errno != EEXIST) rc = kc_local_err_errno_(errno, 1, "creating '%s'", l->v1);
    struct stat st;
    if (rc == KC_OK && lstat(l->v1, &st) != 0) rc = kc_local_err_errno_(errno, 0, "checking directory '%s'", l->v1);
    if (rc == KC_OK && !S_ISDIR(st.st_mode)) rc = kc_fs_real_dir(l->v1); /* a link or a file: its error */
    if (rc == KC_OK && !made) rc = layout_checked(l, &st, memo);
    for (int s = 0; rc == KC_OK && made && s < KC_SHARDS; s++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", s);
        rc = kc_local_make_sub_(l, sub);
    }
    if (rc == KC_OK && made) rc = kc_local_make_sub_(l, "quarantine");
    return rc;
}

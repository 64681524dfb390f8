/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit_direct.c — the toolkit digest's direct mode ([Note: toolkit direct mode] in
 * toolkit.h): a compile watches which of the toolkit's files NVRTC reads (inotify), records a
 * manifest of those files' signatures, and a later process that finds every listed file
 * unchanged takes the digest without walking the tree ([Note: toolkit reads travel]).
 *
 * The one idea: a manifest vouches for a digest only while every file and folder it lists has
 * the signature it recorded and has settled (no write in the last KC_TK_SETTLE_NS), under the
 * same shims and the same way of reading the tree (the version line); anything else is a walk.
 * Callers: compile/units.c and graph/lookup.c through toolkit.h (watch, direct, reads).
 * Must not: trust a manifest that is cut short, of another version, or over KC_TK_DIRECT_MAX;
 * write one without a folder from its caller (a read-only cache gives none: it only reads them).
 */
#include "toolkit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "kcache/entry.h" /* KC_ORIGIN_VALUE_MAX */
#include "../common/internal.h"
#include "pch.h"
#include "toolkit_fan.h"
#include "toolkit_impl.h"

/* The version line names how kcache has NVRTC read the tree ([Note: toolkit includes]): a kcache
 * that reads it otherwise trusts none of these manifests. */
#define KC_TK_DIRECT_VERSION \
    "kcache-toolkit-direct 2 (" KC_TK_MEMO_VERSION "; -I<root> -I<root>/cccl; /dev/null/<file>)"
#define KC_TK_DIRECT_MAX (16u << 20)

/* One file's or folder's stat_fields, hashed. */
static uint64_t stat_sig(const struct stat *st) {
    int64_t f[8];
    stat_fields(st, f);
    uint64_t h = XXH3_64bits(f, sizeof f);
    return h ? h : 1;
}

/* The in-memory standard headers: a direct manifest made by another build of kcache vouches for nothing. */
uint64_t shims_sig(void) {
    size_t ns;
    const kc_header_src *sh = kc_toolkit_shims(&ns);
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
    for (size_t i = 0; i < ns; i++) {
        XXH3_64bits_update(s, sh[i].name, strlen(sh[i].name) + 1);
        XXH3_64bits_update(s, sh[i].source, strlen(sh[i].source) + 1);
    }
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h;
}

/* The stat of `rel` under the folder `rfd` ("." the folder itself) now: 0 when it is gone. */
static uint64_t sig_now(int rfd, const char *rel) {
    struct stat st;
    return fstatat(rfd, rel, &st, 0) == 0 ? stat_sig(&st) : 0;
}

/* [Note: too new to vouch for] A file written twice within one tick of the file system's clock
 * (a jiffy; a second or two on some file systems) keeps its stat: a signature taken then could
 * miss the second write, while the digest hashed the first.  As ccache does, nothing changed
 * less than KC_TK_SETTLE_NS before the verifying walk began is vouched for: no manifest then. */
#define KC_TK_SETTLE_NS 2000000000LL


struct kc_toolkit_watch {
    int fd;
    uint64_t uncredited; /* uses credited to no watch when it began ([Note: a PCH's reads]) */
    int *dir_of_wd;      /* watch descriptor -> folder index in memo_walk.dirs, -1 none */
    size_t nwd;
    kc_toolkit_watch *prev;   /* the thread's current watch before this one */
    pthread_mutex_t mu;       /* what follows: its compiles run on the compile pool's threads */
    unsigned char *read_flag; /* a flag per file of memo_walk: read by this watch's compiles (fold) */
    unsigned char *ino_flag;  /* ... opened under the tree, by any process (inotify, drained so far) */
    unsigned char *own_flag;  /* ... opened by this process (fanotify, drained so far) */
    kc_tk_fan *fan;           /* NULL: every open inotify saw counts ([Note: only our own reads]) */
    int broken;               /* the reads cannot be known whole (watch_reads) */
    int hidden;               /* a PCH whose reads are not known was used: no manifest */
};

/* The watch of the compile running on this thread ([Note: a PCH's reads]). */
static _Thread_local kc_toolkit_watch *current;
/* PCH uses on a thread without a watch: every watch running then records nothing. */
static uint64_t uncredited;

/* The reads of the PCH files made in this process, by file ([Note: a PCH's reads]): the last
 * KC_TK_PCH_MAX made (a file's name is never made twice in a process: pch.c numbers them). */
#define KC_TK_PCH_MAX 256
static pthread_mutex_t pch_mu = PTHREAD_MUTEX_INITIALIZER;
static char *pch_file[KC_TK_PCH_MAX];
static unsigned char *pch_flag[KC_TK_PCH_MAX]; /* over memo_walk.v */
static size_t pch_next;

/* A child forked while a compile held pch_mu can still compile (as pch.c's lock). */
static void pch_mu_lock(void) { pthread_mutex_lock(&pch_mu); }
static void pch_mu_unlock(void) { pthread_mutex_unlock(&pch_mu); }
static void pch_mu_atfork(void) { pthread_atfork(pch_mu_lock, pch_mu_unlock, pch_mu_unlock); }

static int dir_path(void *ctx, size_t i, char *out, size_t cap);
void kc_toolkit_watch_begin(kc_toolkit_watch **out) {
    *out = NULL;
    if (!walk_kept()) return;
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* pch_mu is taken only under a watch */
    pthread_once(&once, pch_mu_atfork);
    kc_toolkit_inputs in;
    if (kc_toolkit_inputs_for("kernel.cu", &in) == KC_OK) { /* the PCH's walk of the tree, before any watch */
        const char *argv[2] = {in.include[0], in.include[1]};
        kc_pch_prescan_(argv, in.ninclude < 2 ? in.ninclude : 2);
    }
    kc_error_clear();
    if (memo_walk.unseen) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest (%zu links to files or dangling in %s)",
               memo_walk.unseen, memo_root);
        return;
    }
    kc_toolkit_watch *w = kc_calloc(1, sizeof *w);
    size_t nwd = memo_walk.dirs.n + 2;
    if (w) w->dir_of_wd = kc_malloc(nwd * sizeof *w->dir_of_wd);
    if (!w || !w->dir_of_wd) goto fail;
    w->nwd = nwd;
    w->uncredited = __atomic_load_n(&uncredited, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < nwd; i++) w->dir_of_wd[i] = -1;
    size_t nf = memo_walk.n ? memo_walk.n : 1;
    if (!(w->read_flag = kc_calloc(nf, 1)) || !(w->ino_flag = kc_calloc(nf, 1)) || !(w->own_flag = kc_calloc(nf, 1)))
        goto fail;
    if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest (inotify: %s)", strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < memo_walk.dirs.n; i++) {
        char p[PATH_MAX];
        int n = snprintf(p, sizeof p, "%s/%s", memo_root, memo_walk.dirs.v[i].rel);
        int wd = n > 0 && (size_t)n < sizeof p ? inotify_add_watch(w->fd, p, IN_OPEN | IN_ONLYDIR) : -1;
        /* One folder reached twice (a link) is one watch: the reads could not be told apart. */
        if (wd < 0 || (size_t)wd >= nwd || w->dir_of_wd[wd] != -1) {
            kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest (watching %s: %s)", p,
                   wd < 0 ? strerror(errno) : "a folder reached twice");
            close(w->fd);
            goto fail;
        }
        w->dir_of_wd[wd] = (int)i;
    }
    w->fan = kc_tk_fan_open(memo_walk.dirs.n, dir_path, NULL);
    pthread_mutex_init(&w->mu, NULL);
    w->prev = current, current = w; /* the compiles of this thread, and of its pool jobs (units.c) */
    *out = w;
    return;
fail:
    if (w) free(w->dir_of_wd), free(w->read_flag), free(w->ino_flag), free(w->own_flag);
    free(w);
}

/* The files opened under the tree since the watch began, into w->read_flag (under w->mu): 0, and
 * w->broken for good, when the reads cannot be known whole (the queue overflowed, a folder went, a
 * file not in the walk was opened).  fanotify's queue is drained first, so that every open of this
 * process it holds is in inotify's when that is drained ([Note: only our own reads]). */
static int drain(kc_toolkit_watch *w);
static int own_open(void *ctx, size_t dir, const char *name);
static void fan_drop(kc_toolkit_watch *w, const char *why) {
    kc_log(KC_LOG_COMPILE, "toolkit headers: every process's opens count from here (%s)", why);
    kc_tk_fan_close(w->fan);
    w->fan = NULL;
}
static int watch_reads(kc_toolkit_watch *w) {
    if (w->fan && !kc_tk_fan_drain(w->fan, own_open, w)) fan_drop(w, "fanotify's opens are not known whole");
    if (!w->broken && !drain(w)) w->broken = 1;
    if (w->broken) return 0;
    for (size_t i = 0; w->fan && i < memo_walk.n; i++)
        if (w->own_flag[i] && !w->ino_flag[i]) fan_drop(w, "fanotify saw an open that inotify did not");
    for (size_t i = 0; i < memo_walk.n; i++) /* without the filter, what either saw: a superset */
        w->read_flag[i] = w->fan ? w->ino_flag[i] && w->own_flag[i] : w->ino_flag[i] || w->own_flag[i];
    return 1;
}

/* Folder i of the walk, under the tree. */
static int dir_path(void *ctx, size_t i, char *out, size_t cap) {
    (void)ctx;
    int n = snprintf(out, cap, "%s/%s", memo_root, memo_walk.dirs.v[i].rel);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The index in memo_walk.v of `name` in folder `dir` of the walk; -1 when the walk did not see it. */
static long file_index(size_t dir, const char *name) {
    const char *d = memo_walk.dirs.v[dir].rel;
    char rel[PATH_MAX];
    int n = strcmp(d, ".") == 0 ? snprintf(rel, sizeof rel, "%s", name) : snprintf(rel, sizeof rel, "%s/%s", d, name);
    if (n < 0 || (size_t)n >= sizeof rel) return -1;
    tfile key = {rel, {0}};
    const tfile *f = bsearch(&key, memo_walk.v, memo_walk.n, sizeof *memo_walk.v, by_rel);
    return f ? (long)(f - memo_walk.v) : -1;
}

static int own_open(void *ctx, size_t dir, const char *name) {
    kc_toolkit_watch *w = ctx;
    long i = dir < memo_walk.dirs.n ? file_index(dir, name) : -1;
    if (i >= 0) w->own_flag[i] = 1;
    return i >= 0;
}

static int drain(kc_toolkit_watch *w) {
    _Alignas(struct inotify_event) char buf[16384];
    for (;;) {
        ssize_t r = read(w->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return 1;
        if (r <= 0) return 0;
        for (char *p = buf; p < buf + r;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT)) return 0;
            if ((ev->mask & IN_ISDIR) || !ev->len) continue; /* a folder's listing is vouched by its stat */
            if (ev->wd < 0 || (size_t)ev->wd >= w->nwd || w->dir_of_wd[ev->wd] < 0) return 0;
            long f = file_index((size_t)w->dir_of_wd[ev->wd], ev->name);
            if (f < 0) return 0; /* made after the walk: not in the digest the key holds */
            w->ino_flag[f] = 1;
        }
    }
}

static int put_line(kc_buf *b, char kind, uint64_t sig, const char *rel) {
    if (strchr(rel, '\n')) return KC_EINVAL; /* a name a line cannot hold: no manifest */
    kc_buf_printf(b, "%c %016llx %s\n", kind, (unsigned long long)sig, rel);
    return b->failed ? KC_ENOMEM : KC_OK;
}

/* Write the direct manifest `memo_dir`/`name` for the files flagged in `read_flag` (indices into
 * memo_walk.v): only when every folder and every file read is as the walk saw it, and was so
 * already at `settle_before` ([Note: too new to vouch for]).  Never fails: logs. */
static void record_manifest(const char *memo_dir, const char *name, const unsigned char *read_flag,
                            int64_t settle_before) {
    /* inotify reports an open under the folder of the file reached, after links: a header that is
     * a link to a file elsewhere would be read unseen; a dangling link's target may appear
     * outside the tree, where no folder's stat changes.  Such a tree is always walked. */
    if (memo_walk.unseen) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest for %s (%zu links to files or dangling in %s)",
               name, memo_walk.unseen, memo_root);
        return;
    }
    int rfd = open(memo_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    kc_buf b = {0};
    kc_buf_printf(&b, KC_TK_DIRECT_VERSION "\nroot %s\nshims %016llx\ndigest %s\n", memo_root,
                  (unsigned long long)shims_sig(), memo_digest);
    int rc = rfd < 0 || strchr(memo_root, '\n') ? KC_EINVAL : b.failed ? KC_ENOMEM : KC_OK;
    size_t lines = 0;
    /* Every folder (a name added or removed anywhere changes its folder's stat: what NVRTC did not
     * find, it still would not), and every file read — each as the walk saw it, and unchanged
     * since: a change during the compile is not vouched for. */
    for (size_t i = 0; rc == KC_OK && i < memo_walk.dirs.n; i++, lines++) {
        uint64_t sig = stat_sig(&memo_walk.dirs.v[i].st);
        rc = !kc_fs_settled(&memo_walk.dirs.v[i].st, settle_before) || sig_now(rfd, memo_walk.dirs.v[i].rel) != sig
                 ? KC_EINVAL
                 : put_line(&b, 'd', sig, memo_walk.dirs.v[i].rel);
    }
    for (size_t i = 0; rc == KC_OK && i < memo_walk.n; i++) {
        if (!read_flag[i]) continue;
        uint64_t sig = stat_sig(&memo_walk.v[i].st);
        rc = !kc_fs_settled(&memo_walk.v[i].st, settle_before) || sig_now(rfd, memo_walk.v[i].rel) != sig
                 ? KC_EINVAL
                 : put_line(&b, 'f', sig, memo_walk.v[i].rel);
        lines++;
    }
    if (rfd >= 0) close(rfd);
    if (rc == KC_OK) {
        kc_buf_printf(&b, "end %zu\n", lines);
        rc = b.failed ? KC_ENOMEM : KC_OK;
    }
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", memo_dir, name);
    if (rc == KC_OK && n > 0 && (size_t)n < sizeof path) {
        /* A manifest that cannot be written costs the next process a walk, nothing more. */
        if (kc_fs_mkdirs(memo_dir, 0700) != KC_OK || kc_fs_write_atomic(path, b.data, b.len) != KC_OK)
            kc_log(KC_LOG_COMPILE, "toolkit direct manifest not written: %s", kc_error_last()->message);
        else
            kc_log(KC_LOG_COMPILE, "toolkit direct manifest %s: %zu folders, %zu files read", name, memo_walk.dirs.n,
                   lines - memo_walk.dirs.n);
    } else {
        kc_log(KC_LOG_COMPILE,
               "toolkit headers: no direct manifest for %s (the tree changed during the compile or "
               "just before it: [Note: too new to vouch for])",
               name);
    }
    kc_buf_free(&b);
}

/* The reads as an entry carries them ([Note: toolkit reads travel]): "<digest> <files in the
 * tree> <first index>,<delta>,…" in hex — indices into the tree's files sorted by relative
 * path, which the digest fixes. */
static char *reads_encode(const unsigned char *read_flag) {
    kc_buf b = {0};
    kc_buf_printf(&b, "%s %zx ", memo_digest, memo_walk.n);
    size_t last = 0, k = 0;
    for (size_t i = 0; i < memo_walk.n; i++) {
        if (!read_flag[i]) continue;
        kc_buf_printf(&b, k++ ? ",%zx" : "%zx", i - last);
        last = i;
    }
    if (!k) kc_buf_printf(&b, "-");
    if (b.len > KC_ORIGIN_VALUE_MAX) b.failed = 1; /* too many to carry: the fleet walks */
    return kc_buf_take_str(&b);
}

/* The flags of `value` (reads_encode's) over memo_walk.v: 0 when it is not of this very tree. */
static int reads_decode(const char *value, unsigned char *read_flag) {
    if (strlen(value) < 34 || strncmp(value, memo_digest, 32) != 0 || value[32] != ' ') return 0;
    const char *end;
    uint64_t n;
    if (!kc_hex_number(value + 33, &end, &n) || n != memo_walk.n || *end != ' ') return 0;
    const char *p = end + 1;
    if (strcmp(p, "-") == 0) return 1;
    unsigned long long at = 0;
    for (int first = 1;; first = 0) {
        uint64_t d;
        if (!kc_hex_number(p, &end, &d) || (!first && d == 0) || d >= n || at + d >= n) return 0;
        at += d;
        read_flag[at] = 1;
        if (*end == '\0') return 1;
        if (*end != ',') return 0;
        p = end + 1;
    }
}

/* This thread's watch is w's predecessor again (a watch ends on the thread it began on). */
static void unlink_current(kc_toolkit_watch *w) {
    if (current == w) current = w->prev;
    for (kc_toolkit_watch *x = current; x; x = x->prev)
        if (x->prev == w) x->prev = w->prev;
}

void kc_toolkit_watch_end(kc_toolkit_watch *w, const char *memo_dir, const char *name, int record, char **reads) {
    if (reads) *reads = NULL;
    if (!w) return;
    unlink_current(w);
    record = record && memo_dir && name;
    pthread_mutex_lock(&w->mu); /* every compile under it is over: for the memory order */
    int whole = record && watch_reads(w);
    int hidden = w->hidden || __atomic_load_n(&uncredited, __ATOMIC_SEQ_CST) != w->uncredited;
    pthread_mutex_unlock(&w->mu);
    if (whole && hidden) { /* a PCH's headers were read from it, and its reads are not known: no manifest */
        kc_log(KC_LOG_COMPILE,
               "toolkit headers: no direct manifest for %s (a precompiled header whose reads are not known was used)",
               name);
        whole = 0, record = 0;
    }
    /* The signatures are the walk's, so is the digest: settled before the walk began. */
    int64_t settle_before = memo_walk_began - KC_TK_SETTLE_NS;
    if (whole) {
        record_manifest(memo_dir, name, w->read_flag, settle_before);
        if (reads) *reads = reads_encode(w->read_flag);
    } else if (record) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest for %s (the reads could not be known whole)",
               name ? name : "?");
    }
    close(w->fd);
    kc_tk_fan_close(w->fan);
    pthread_mutex_destroy(&w->mu);
    free(w->dir_of_wd);
    free(w->read_flag), free(w->ino_flag), free(w->own_flag);
    free(w);
}

kc_toolkit_watch *kc_toolkit_watch_current_(void) { return current; }

int kc_toolkit_watch_filtered_(const kc_toolkit_watch *w) { return w && w->fan; }

kc_toolkit_watch *kc_toolkit_watch_adopt_(kc_toolkit_watch *w) {
    kc_toolkit_watch *was = current;
    current = w;
    return was;
}


/* The slot of `pch` (under pch_mu), KC_TK_PCH_MAX when none. */
static size_t pch_slot(const char *pch) {
    size_t i = 0;
    while (i < KC_TK_PCH_MAX && !(pch_file[i] && strcmp(pch_file[i], pch) == 0)) i++;
    return i;
}

void kc_toolkit_pch_made_(const char *pch) {
    kc_toolkit_watch *w = current;
    unsigned char *flag = NULL;
    char *name = pch ? kc_strdup(pch) : NULL;
    if (w && name) { /* its watch began before its compile: what it saw so far holds every read of it */
        pthread_mutex_lock(&w->mu);
        if (watch_reads(w) && (flag = kc_malloc(memo_walk.n ? memo_walk.n : 1)))
            memcpy(flag, w->read_flag, memo_walk.n);
        pthread_mutex_unlock(&w->mu);
    }
    if (!flag) { /* its uses hide their reads */
        kc_log(KC_LOG_COMPILE, "toolkit headers: the reads of %s are not known (%s)", pch ? pch : "a PCH",
               w ? "its watch's reads are not known whole" : "made under no watch");
        free(name);
        return;
    }
    pthread_mutex_lock(&pch_mu);
    size_t i = pch_slot(name);
    if (i == KC_TK_PCH_MAX) i = pch_next++ % KC_TK_PCH_MAX; /* the oldest forgotten: its uses hide their reads */
    free(pch_file[i]), free(pch_flag[i]);
    pch_file[i] = name, pch_flag[i] = flag;
    pthread_mutex_unlock(&pch_mu);
}

void kc_toolkit_pch_used_(const char *pch) {
    kc_toolkit_watch *w = current;
    if (!w) { /* whose compile it was is not known: every watch running now records nothing */
        __atomic_add_fetch(&uncredited, 1, __ATOMIC_SEQ_CST);
        return;
    }
    pthread_mutex_lock(&pch_mu);
    size_t i = pch ? pch_slot(pch) : KC_TK_PCH_MAX;
    pthread_mutex_lock(&w->mu);
    if (i == KC_TK_PCH_MAX) w->hidden = 1;
    for (size_t f = 0; i < KC_TK_PCH_MAX && f < memo_walk.n; f++) { /* read by this process, from the PCH */
        w->read_flag[f] |= pch_flag[i][f], w->ino_flag[f] |= pch_flag[i][f], w->own_flag[f] |= pch_flag[i][f];
    }
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&pch_mu);
    if (i == KC_TK_PCH_MAX)
        kc_log(KC_LOG_COMPILE, "toolkit headers: %s used, its reads not known", pch ? pch : "a PCH");
}

void kc_toolkit_direct_from_reads(const char *memo_dir, const char *name, const char *reads) {
    if (!walk_kept() || !memo_dir || !name || !reads) return;
    unsigned char *read_flag = kc_calloc(memo_walk.n ? memo_walk.n : 1, 1);
    if (read_flag && reads_decode(reads, read_flag))
        record_manifest(memo_dir, name, read_flag, memo_walk_began - KC_TK_SETTLE_NS);
    else
        kc_log(KC_LOG_COMPILE, "toolkit headers: the entry's reads are not of this tree; no direct manifest for %s",
               name);
    free(read_flag);
}

/* The manifest lines ("<kind> <signature> <path>") already found true in this process: several
 * graphs' manifests name the same folders and headers, each is stat'ed once per process (as the
 * digest itself is verified once per process).  An open-addressed set of the lines' hashes. */
#define KC_TK_SEEN_CAP 8192
static uint64_t *seen;
static size_t nseen;

static int seen_has(uint64_t h) {
    pthread_mutex_lock(&direct_mu);
    int k = 0;
    for (size_t i = h % KC_TK_SEEN_CAP; seen && seen[i]; i = (i + 1) % KC_TK_SEEN_CAP)
        if (seen[i] == h) {
            k = 1;
            break;
        }
    pthread_mutex_unlock(&direct_mu);
    return k;
}

static void seen_add(uint64_t h) {
    pthread_mutex_lock(&direct_mu);
    if (!seen) seen = kc_calloc(KC_TK_SEEN_CAP, sizeof *seen); /* kept for the process */
    if (seen && nseen < KC_TK_SEEN_CAP / 2) {                  /* at most half full: every probe ends */
        size_t i = h % KC_TK_SEEN_CAP;
        while (seen[i] && seen[i] != h) i = (i + 1) % KC_TK_SEEN_CAP;
        if (!seen[i]) seen[i] = h, nseen++;
    }
    pthread_mutex_unlock(&direct_mu);
}

/* One manifest line: well formed, and its path's stat signature now the one it names. */
static int line_true(int rfd, const char *l, char kind) {
    uint64_t sig;
    size_t n = strlen(l);
    if (n <= 19 || l[0] != kind || l[1] != ' ' || l[18] != ' ') return 0;
    uint64_t h = XXH3_64bits(l, n);
    h = h ? h : 1;
    if (seen_has(h)) return 1; /* this very line, its signature too, was found true in this process */
    if (!kc_hex_u64(l + 2, 16, &sig) || sig_now(rfd, l + 19) != sig) return 0;
    seen_add(h);
    return 1;
}

static int direct_check(char *text, size_t len, char out[33]) {
    char *p = text, *end = text + len, *l;
    char want[PATH_MAX + 64];
    if (!(l = kc_line_next(&p, end)) || strcmp(l, KC_TK_DIRECT_VERSION) != 0) return 0;
    if (!direct_root_known()) return 0;
    snprintf(want, sizeof want, "root %s", direct_root);
    if (!(l = kc_line_next(&p, end)) || strcmp(l, want) != 0) return 0;
    snprintf(want, sizeof want, "shims %016llx", (unsigned long long)shims_sig());
    if (!(l = kc_line_next(&p, end)) || strcmp(l, want) != 0) return 0;
    if (!(l = kc_line_next(&p, end)) || strncmp(l, "digest ", 7) != 0 || !kc_hex_is(l + 7, 32)) return 0;
    char digest[33];
    memcpy(digest, l + 7, 33);
    int rfd = open(direct_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) return 0;
    size_t lines = 0;
    int ok = 1;
    while (ok && (l = kc_line_next(&p, end)) && l[0] == 'd') ok = line_true(rfd, l, 'd'), lines++;
    ok = ok && lines > 0; /* the root folder at least */
    while (ok && l && l[0] == 'f') {
        ok = line_true(rfd, l, 'f');
        lines++;
        l = kc_line_next(&p, end);
    }
    close(rfd);
    /* The last line counts the others: a manifest cut short vouches for nothing. */
    char tail[48];
    snprintf(tail, sizeof tail, "end %zu", lines);
    ok = ok && l && strcmp(l, tail) == 0 && p == end;
    if (!ok) return 0;
    memcpy(out, digest, 33);
    return 1;
}

static int direct_reads; /* manifests read by kc_toolkit_direct, for tests (kc_toolkit_direct_reads_) */
int kc_toolkit_direct_reads_(void) { return __atomic_load_n(&direct_reads, __ATOMIC_RELAXED); }

int kc_toolkit_direct(const char *memo_dir, const char *name, char out[33]) {
    out[0] = '\0';
    __atomic_add_fetch(&direct_reads, 1, __ATOMIC_RELAXED);
    char path[PATH_MAX];
    int n = memo_dir && name ? snprintf(path, sizeof path, "%s/%s", memo_dir, name) : -1;
    if (n <= 0 || (size_t)n >= sizeof path) return 0;
    void *data;
    size_t len;
    kc_err_saved keep; /* no manifest is no error */
    kc_err_save(&keep);
    int rrc = kc_fs_read_file(path, KC_TK_DIRECT_MAX, &data, &len, NULL);
    kc_err_restore(&keep);
    if (rrc != KC_OK) return 0;
    int ok = direct_check(data, len, out);
    free(data);
    if (!ok) out[0] = '\0';
    kc_log(KC_LOG_COMPILE, "toolkit headers: direct manifest %s %s", name, ok ? "vouches" : "does not vouch");
    return ok;
}

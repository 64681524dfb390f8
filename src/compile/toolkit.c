/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit.c — the CUDA toolkit's headers as a first-class input: where they are, the
 * standard headers NVRTC lacks (served from memory), and the digest that puts them in the key.
 *
 * The one idea: a kernel that asks for the toolkit's headers may read any file under the
 * toolkit's include folder, so the key holds a digest of all of them — by relative path and
 * contents, so two hosts with the same toolkit share keys wherever it is installed.  Hashing
 * ~2,000 files (28 MB for CUDA 13) costs tens of milliseconds, so it is done once per process
 * and, given a memo folder, once per installation: a memo file maps a signature of every
 * file's (path, size, mtime, ctime, inode) to the digest, so a header edited in place, a
 * package upgrade or another toolkit at the same path is hashed again ([Note: toolkit includes]
 * in toolkit.h says how NVRTC is kept from reading anything else).
 *
 * Callers: compile/nvrtc.c (kc_toolkit_inputs_for), graph/graph_key.c (kc_toolkit_digest),
 * the public kc_toolkit_headers_id (compile.h).  The shims are toolkit_shims.c's; the direct
 * mode ([Note: toolkit direct mode]) is toolkit_direct.c's; toolkit_impl.h is what they share.
 * Must not: load NVRTC; follow more than KC_TK_MAX_DEPTH folders down or take more than
 * KC_TK_MAX_FILES files (a hostile or looping tree is an error, not a hang).
 */
#include "toolkit.h"

#include <dirent.h>
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
#include "kcache/entry.h"
#include "../common/internal.h"
#include "../config/config.h"
#include "toolkit_impl.h"

#ifndef KC_CUDA_INCDIR
#define KC_CUDA_INCDIR "/usr/local/cuda/include"
#endif

#define KC_TK_MAX_DEPTH 24
#define KC_TK_MAX_FILES 200000

/* ---- where the headers are ---- */

static int is_toolkit_include(const char *dir) {
    char p[PATH_MAX];
    struct stat st;
    int n = snprintf(p, sizeof p, "%s/cuda_fp16.h", dir);
    return n > 0 && (size_t)n < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The include folder, resolved (realpath): KCACHE_CUDA_INCLUDE, else the toolkit kcache was built with. */
static int include_dir(char out[PATH_MAX]) {
    const char *env = kc_config_process()->v.cuda_include;
    const char *cand[] = {KC_CUDA_INCDIR, "/usr/local/cuda/include"};
    if (env && *env) {
        if (!realpath(env, out) || !is_toolkit_include(out))
            return kc_err(KC_ENONVRTC, "KCACHE_CUDA_INCLUDE='%s' is not a CUDA toolkit include folder (no cuda_fp16.h)",
                          env);
        return KC_OK;
    }
    for (size_t i = 0; i < KC_ARRAY_LEN(cand); i++)
        if (realpath(cand[i], out) && is_toolkit_include(out)) return KC_OK;
    return kc_err(KC_ENONVRTC,
                  "the CUDA toolkit's headers are not here (looked in %s and /usr/local/cuda/include; "
                  "set KCACHE_CUDA_INCLUDE to the toolkit's include folder)",
                  KC_CUDA_INCDIR);
}

static int process_root(char out[PATH_MAX]);

int kc_toolkit_inputs_for(const char *file, kc_toolkit_inputs *in) {
    memset(in, 0, sizeof *in);
    char dir[PATH_MAX];
    int rc = process_root(dir);
    if (rc) return rc;
    snprintf(in->include[in->ninclude++], sizeof in->include[0], "-I%s", dir);
    char cccl[PATH_MAX + 8];
    struct stat st;
    snprintf(cccl, sizeof cccl, "%s/cccl", dir);
    if (stat(cccl, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(in->include[in->ninclude++], sizeof in->include[0], "-I%s", cccl);
    in->shims = kc_toolkit_shims(&in->nshims);
    const char *name = file && *file ? file : "kernel.cu";
    /* The name goes into a string literal: quotes, backslashes and newlines would end it. */
    char safe[KC_TOOLKIT_NAME_MAX - 32];
    size_t j = 0;
    for (const char *p = name; *p && j + 1 < sizeof safe; p++)
        safe[j++] = (*p == '"' || *p == '\\' || *p == '\n' || *p == '\r') ? '_' : *p;
    safe[j] = '\0';
    snprintf(in->program, sizeof in->program, "/dev/null/%s", safe);
    snprintf(in->prefix, sizeof in->prefix, "#line 1 \"%s\"\n", safe);
    return KC_OK;
}

/* ---- the digest ---- */


static int add_to(tlist *l, size_t total, const char *rel, const struct stat *st) {
    if (total >= KC_TK_MAX_FILES)
        return kc_err(KC_EINVAL, "the toolkit's include folder holds more than %d files", KC_TK_MAX_FILES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        tfile *v = kc_realloc(l->v, cap * sizeof *v);
        if (!v) return kc_err(KC_ENOMEM, "toolkit digest: out of memory");
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n].rel = kc_strdup(rel))) return kc_err(KC_ENOMEM, "toolkit digest: out of memory");
    l->v[l->n++].st = *st;
    return KC_OK;
}

static int add_file(walk *w, const char *rel, const struct stat *st) {
    tlist l = {w->v, w->n, w->cap};
    int rc = add_to(&l, w->n + w->dirs.n, rel, st);
    w->v = l.v, w->n = l.n, w->cap = l.cap;
    return rc;
}

/* Every regular file under the folder `dfd` (named rel under root; symbolic links followed, as
 * NVRTC would).  Takes `dfd`.  fstatat against the folder's descriptor: no path resolution per file. */
static int walk_dir(walk *w, int dfd, const char *root, const char *rel, int depth) {
    if (depth > KC_TK_MAX_DEPTH) {
        close(dfd);
        return kc_err(KC_EINVAL, "the toolkit's include folder is deeper than %d (a loop?)", KC_TK_MAX_DEPTH);
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return kc_err_errno(e, "cannot read the toolkit folder %s/%s", root, rel);
    }
    int rc = KC_OK;
    struct dirent *de;
    while (rc == KC_OK && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char sub[PATH_MAX];
        int a = snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        if (a < 0 || (size_t)a >= sizeof sub - strlen(root) - 2) {
            rc = kc_err(KC_EINVAL, "toolkit path too long: %s/%s/%s", root, rel, de->d_name);
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0) {
            /* A dangling link (or one NVRTC may not follow): nothing it could read now — but its
             * target may appear outside the tree, where no folder's stat shows it. */
            w->unseen++;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sfd = (rc = add_to(&w->dirs, w->n + w->dirs.n, sub, &st))
                          ? -1
                          : openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            rc = rc        ? rc
                 : sfd < 0 ? kc_err_errno(errno, "cannot read the toolkit folder %s/%s", root, sub)
                           : walk_dir(w, sfd, root, sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            struct stat lst;
            if (de->d_type == DT_LNK ||
                (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISLNK(lst.st_mode)))
                w->unseen++;
            rc = add_file(w, sub, &st);
        }
    }
    closedir(d);
    return rc;
}

static int walk_root(walk *w, const char *root) {
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return kc_err_errno(errno, "cannot read the toolkit folder %s", root);
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? kc_err_errno(errno, "cannot read the toolkit folder %s", root)
                                 : add_to(&w->dirs, 0, ".", &st);
    if (rc) {
        close(fd);
        return rc;
    }
    return walk_dir(w, fd, root, "", 0);
}

int by_rel(const void *a, const void *b) { return strcmp(((const tfile *)a)->rel, ((const tfile *)b)->rel); }

static void walk_free(walk *w) {
    for (size_t i = 0; i < w->n; i++) free(w->v[i].rel);
    for (size_t i = 0; i < w->dirs.n; i++) free(w->dirs.v[i].rel);
    free(w->v);
    free(w->dirs.v);
    memset(w, 0, sizeof *w);
}

/* What a file's or folder's stat says about it: any write, replacement or rename changes one of these. */
void stat_fields(const struct stat *st, int64_t f[8]) {
    f[0] = (int64_t)st->st_size, f[1] = (int64_t)st->st_mtim.tv_sec, f[2] = (int64_t)st->st_mtim.tv_nsec;
    f[3] = (int64_t)st->st_ctim.tv_sec, f[4] = (int64_t)st->st_ctim.tv_nsec, f[5] = (int64_t)st->st_ino;
    f[6] = (int64_t)st->st_dev, f[7] = (int64_t)st->st_mode;
}


/* The local signature: what changes when any file is added, removed, replaced or written — and
 * when the in-memory standard headers do (another build of kcache): they are in the digest the
 * memo maps this signature to, so a memo written under other shims must not vouch for it. */
uint64_t signature(const char *root, const walk *w) {
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
    XXH3_64bits_update(s, root, strlen(root) + 1);
    uint64_t sh = shims_sig();
    XXH3_64bits_update(s, &sh, sizeof sh);
    for (size_t i = 0; i < w->n; i++) {
        int64_t f[8];
        stat_fields(&w->v[i].st, f);
        XXH3_64bits_update(s, w->v[i].rel, strlen(w->v[i].rel) + 1);
        XXH3_64bits_update(s, f, sizeof f);
    }
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h ? h : 1;
}

static void put_u64(XXH3_state_t *s, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    XXH3_128bits_update(s, b, 8);
}

/* The portable digest: relative paths and contents, in path order, then the shims. */
static int content_digest(const char *root, const walk *w, char out[33]) {
    XXH3_state_t *s = XXH3_createState();
    char *buf = kc_malloc(1 << 16);
    if (!s || !buf) {
        XXH3_freeState(s);
        free(buf);
        return kc_err(KC_ENOMEM, "toolkit digest: out of memory");
    }
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, KC_TK_MEMO_VERSION, sizeof KC_TK_MEMO_VERSION);
    int rc = KC_OK;
    for (size_t i = 0; i < w->n && rc == KC_OK; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", root, w->v[i].rel);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            rc = kc_err_errno(errno, "cannot read the toolkit header %s", path);
            break;
        }
        XXH3_128bits_update(s, w->v[i].rel, strlen(w->v[i].rel) + 1);
        uint64_t total = 0;
        for (;;) {
            ssize_t r = read(fd, buf, 1 << 16);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                rc = kc_err_errno(errno, "cannot read the toolkit header %s", path);
                break;
            }
            if (r == 0) break;
            XXH3_128bits_update(s, buf, (size_t)r);
            total += (uint64_t)r;
        }
        close(fd);
        put_u64(s, total); /* ends the file: no two trees hash alike by moving bytes across files */
    }
    size_t ns;
    const kc_header_src *sh = kc_toolkit_shims(&ns);
    for (size_t i = 0; i < ns; i++) {
        XXH3_128bits_update(s, sh[i].name, strlen(sh[i].name) + 1);
        XXH3_128bits_update(s, sh[i].source, strlen(sh[i].source) + 1);
    }
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    free(buf);
    if (rc) return rc;
    uint8_t b[16];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(h.high64 >> (56 - 8 * i)), b[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
    kc_hex(b, 16, out);
    return KC_OK;
}

/* The memo file of an installation: "<memo_dir>/<xxh64(root)>.toolkit". */
static void memo_path(const char *memo_dir, const char *root, char *out, size_t cap) {
    snprintf(out, cap, "%s/%016llx.toolkit", memo_dir, (unsigned long long)XXH3_64bits(root, strlen(root)));
}

int kc_toolkit_memo_read_(const char *path, uint64_t sig, char out[33]) {
    void *data;
    size_t len;
    if (kc_fs_read_file(path, 4096, &data, &len, NULL) != KC_OK) return 0;
    char text[4097];
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    char want[64];
    snprintf(want, sizeof want, KC_TK_MEMO_VERSION "\nsig %016llx\ndigest ", (unsigned long long)sig);
    size_t wl = strlen(want);
    if (strncmp(text, want, wl) != 0 || strlen(text) < wl + 32) return 0;
    for (size_t i = 0; i < 32; i++) {
        char c = text[wl + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
    }
    memcpy(out, text + wl, 32);
    out[32] = '\0';
    return 1;
}

static int include_root(char out[PATH_MAX]);

/* The process's memo: one toolkit per process (KCACHE_CUDA_INCLUDE is read once).  The walk
 * that verified the digest is kept with it (never freed, never changed once set): a compile's
 * watch and its direct manifest are made from it ([Note: toolkit direct mode]). */
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
char memo_digest[33];
char memo_root[PATH_MAX];
walk memo_walk;
int64_t memo_walk_began;       /* CLOCK_REALTIME, as file times: when the verifying walk began */
static uint64_t memo_walk_sig; /* signature() of memo_walk */
static int memo_walks;         /* whole walks this process made (kc_toolkit_walks_) */

int kc_toolkit_digest(const char *memo_dir, int write_memo, char out[33]) {
    pthread_mutex_lock(&memo_mu);
    if (memo_digest[0]) {
        memcpy(out, memo_digest, 33);
        pthread_mutex_unlock(&memo_mu);
        return KC_OK;
    }
    char root[PATH_MAX];
    int rc = include_root(root); /* the folder this process resolved first, if it did */
    walk w = {0};
    int64_t began = (int64_t)kc_now_ns();
    uint64_t sig = 0;
    if (!rc) {
        memo_walks++;
        rc = walk_root(&w, root);
    }
    if (!rc) {
        qsort(w.v, w.n, sizeof *w.v, by_rel);
        qsort(w.dirs.v, w.dirs.n, sizeof *w.dirs.v, by_rel);
        sig = signature(root, &w);
        char mp[PATH_MAX];
        if (memo_dir) memo_path(memo_dir, root, mp, sizeof mp);
        if (memo_dir && kc_toolkit_memo_read_(mp, sig, out)) {
            kc_log(KC_LOG_COMPILE, "toolkit headers %s: %s (memo)", root, out);
        } else if ((rc = content_digest(root, &w, out)) == KC_OK) {
            kc_log(KC_LOG_COMPILE, "toolkit headers %s: %s (%zu files hashed)", root, out, w.n);
            if (memo_dir && write_memo) {
                char text[128];
                int n = snprintf(text, sizeof text, KC_TK_MEMO_VERSION "\nsig %016llx\ndigest %s\n",
                                 (unsigned long long)sig, out);
                /* A memo that cannot be written costs the next process a hash, nothing more. */
                if (kc_fs_mkdirs(memo_dir, 0700) != KC_OK || kc_fs_write_atomic(mp, text, (size_t)n) != KC_OK)
                    kc_log(KC_LOG_COMPILE, "toolkit memo not written: %s", kc_error_last()->message);
            }
        }
    }
    if (rc == KC_OK) {
        memcpy(memo_digest, out, 33);
        memcpy(memo_root, root, sizeof root);
        memo_walk = w; /* kept: the watch and the direct manifests are made from it */
        memo_walk_began = began;
        memo_walk_sig = sig;
    } else {
        walk_free(&w);
    }
    pthread_mutex_unlock(&memo_mu);
    return rc;
}

/* The folder a compile reads: the one this process's digest was verified on, once it is — a
 * /usr/local/cuda switched or KCACHE_CUDA_INCLUDE changed mid-process never pairs one tree's
 * digest (and watch) with another tree's bytes. */
static int process_root(char out[PATH_MAX]) {
    pthread_mutex_lock(&memo_mu);
    int known = memo_digest[0] != '\0';
    if (known) memcpy(out, memo_root, PATH_MAX);
    pthread_mutex_unlock(&memo_mu);
    return known ? KC_OK : include_dir(out);
}

/* 1 when this process's walk is kept (its digest verified): memo_walk, memo_root, memo_digest and
 * memo_walk_began never change once set, so a caller told 1 reads them without the lock. */
int walk_kept(void) {
    pthread_mutex_lock(&memo_mu);
    int kept = memo_digest[0] != '\0';
    pthread_mutex_unlock(&memo_mu);
    return kept;
}

int kc_toolkit_unchanged(void) {
    if (!walk_kept()) return 1;
    kc_err_saved keep; /* a walk that fails says "changed", and records nothing ([Note: cleanup keeps the error]) */
    kc_err_save(&keep);
    walk w = {0};
    int same = walk_root(&w, memo_root) == KC_OK;
    if (same) {
        qsort(w.v, w.n, sizeof *w.v, by_rel);
        same = signature(memo_root, &w) == memo_walk_sig && w.unseen == memo_walk.unseen;
    }
    walk_free(&w);
    kc_err_restore(&keep);
    if (!same) kc_log(KC_LOG_COMPILE, "toolkit headers %s changed since this process's walk", memo_root);
    return same;
}

int kc_toolkit_digest_known(char out[33]) {
    pthread_mutex_lock(&memo_mu);
    int known = memo_digest[0] != '\0';
    if (known && out) memcpy(out, memo_digest, 33);
    pthread_mutex_unlock(&memo_mu);
    return known;
}

pthread_mutex_t direct_mu = PTHREAD_MUTEX_INITIALIZER;
char direct_root[PATH_MAX];
static int direct_root_rc = -1;

/* The include folder as this process first found it (direct_root never changes once set). */
int direct_root_known(void) {
    pthread_mutex_lock(&direct_mu);
    if (direct_root_rc < 0) {
        kc_err_saved keep;
        kc_err_save(&keep);
        direct_root_rc = include_dir(direct_root) == KC_OK ? 0 : 1;
        kc_err_restore(&keep);
    }
    int ok = direct_root_rc == 0;
    pthread_mutex_unlock(&direct_mu);
    return ok;
}

int kc_toolkit_present(void) { return direct_root_known(); }

/* The include folder, resolved once per process (a /usr/local/cuda relinked meanwhile is the
 * next process's); include_dir's error when there is none. */
static int include_root(char out[PATH_MAX]) {
    if (!direct_root_known()) return include_dir(out);
    memcpy(out, direct_root, PATH_MAX);
    return KC_OK;
}

int kc_toolkit_walks_(void) {
    pthread_mutex_lock(&memo_mu);
    int n = memo_walks;
    pthread_mutex_unlock(&memo_mu);
    return n;
}

int kc_toolkit_headers_id(char out[33]) {
    if (!out) return kc_err(KC_EINVAL, "kc_toolkit_headers_id: out is NULL");
    return kc_toolkit_digest(NULL, 0, out);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_direct.c — the spec direct mode: a warm start that neither reads, parses nor hashes a
 * spec and its sources whose stat signatures are those recorded when their key was computed.
 *
 * The one idea: a memo (one file per spec, by its absolute path) records the stat signature of
 * the spec and of every file its description was read from, with the key that description had
 * under one toolchain and toolkit digest; a later kc_graph_desc_load that finds every signature
 * unchanged returns a description "vouched but not read", whose key a lookup takes from the
 * memo — and which is read for real (materialized) before anything but a local hit of that key.
 *
 * Callers: spec.c (kc_graph_desc_load), graph_key.c (the key of a vouched description, the memo
 * written after a key computed from files read), desc.c and every reader of a description's
 * content (kc_spec_direct_ready_).  Must not: vouch for a file changed within the settle window,
 * trust a memo cut short, of another version or of another path; write a memo for a read-only
 * cache, or for a description that was not read whole from its files in this process.
 *
 * [Note: spec direct mode] The toolkit direct mode's discipline ([Note: toolkit direct mode] in
 * compile/toolkit.h) applied to specs:
 *  - every file the description's content came from is in the memo: the spec ("s"), and each
 *    file read beside it ("f <signature> <name relative to the spec's folder>": sources and
 *    headers).  A spec finds its files by the names it lists, never by search, so there is no
 *    absence to record: a name that resolves elsewhere (a link or folder changed on its path)
 *    reaches another inode, whose signature differs.
 *  - a signature is XXH3 of device, inode, size, mode, mtime and ctime (ns): a file replaced by
 *    a rename (another inode) or rewritten and given its old mtime back (ctime moves) differs.
 *  - the settle window: a file whose mtime or ctime is not KC_SPEC_SETTLE_NS older than the
 *    moment its load began is never recorded (two writes within one tick of the file system's
 *    clock keep one signature); its stat is taken before and after its read, and the open file's
 *    (fstat), and a file whose three signatures are not one (moved, or its name flipped to another
 *    file and back during the read) is not recorded either.  A load that failed records nothing.
 *  - the version line names this build of kcache, the entry format and the kernel binding: a
 *    memo written by another build vouches for nothing.  The "end N" line counts the others.
 *  - the memo holds the key under the toolchain identity and the toolkit digest it was computed
 *    with (and, for a graph that reads the toolkit's headers, its key without the digest, which
 *    names its toolkit direct manifest); both identities are computed as today at each lookup
 *    and compared — another toolchain or toolkit reads the files.
 *  - a lookup may serve a local hit of the vouched key; before a remote is asked, another variant
 *    is taken, a miss is counted or anything is compiled, the description is read for real and
 *    its key computed again (graph/lookup.c's confirm-before-miss, shared with the toolkit
 *    direct mode): no entry is ever written under a key taken from a memo.  If the files
 *    changed since the load, the new key is the one looked up.
 *  - every other reader of the description (its public accessors, explain, specialize, the
 *    builders) reads it first (kc_spec_direct_ready_), through the absolute path of its load and
 *    naming the files as the load named them.  That read must find what the memo vouched for:
 *    the memo's "s"/"f" lines (kept at the load) are compared with the read's own (every file,
 *    whatever its age) and the name and kernel count with the memo's, so the description is the
 *    load's snapshot and its key the memo's — one description never hands out a hit of one
 *    content and then a kernel of another.  A read that fails or finds other files ("<spec>:
 *    changed since it was loaded (load the spec again)"; a source removed keeps the reader's
 *    message, prefixed with the graph and what to do) is sticky: every later reader, and every
 *    lookup (kc_spec_direct_vouches_), gets that error — a builder's change that could not be
 *    made (kc_graph_set_globals returns nothing) never leaves the memo's key to be served.
 *  - the name and kernel count are the memo's from the load and never change (a pointer from
 *    kc_graph_desc_name stays valid; threads sharing the description read them at any time);
 *    the rest is read only after kc_spec_direct_ready_ (or lazy seen 0, acquire).
 * Where the memos live: "spec-<xxh128 of the absolute path>" in the toolkit memo folder of a cache
 * (kc_graph_desc_load has no cache handle): written only through a cache that is not read-only,
 * after the key of a description read whole; read from the folder of the cache this process opened
 * last (kc_cache_open notes it: a runtime opens its cache, then loads its specs; `kcache prewarm`
 * loads every spec before its first lookup).  A spec loaded before any cache is opened is read
 * whole; so is one whose memo is in another cache than the one opened last (a process of two
 * caches: a cost, never a wrong key — the memo names which key to look up, in whichever cache).  A memo is as trusted as that folder, which may
 * already hold every entry; it never names an entry that exists, only which key to look up.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../cache/internal.h"
#include "../common/fs.h"
#include "../common/internal.h"
#include "graph_internal.h"
#include "kcache/entry.h"
#include "kcache/version.h"

#define KC_SPEC_DIRECT_VERSION                        \
    "kcache-spec-direct 1 (kcache " KC_VERSION_STRING \
    "; entry " KC_STR_(KC_ENTRY_FORMAT_VERSION) "; binding " KC_STR_(KC_GRAPH_BINDING_VERSION) ")"
#define KC_STR2_(x) #x
#define KC_STR_(x) KC_STR2_(x)
#define KC_SPEC_DIRECT_MAX (1u << 20)
#define KC_SPEC_SETTLE_NS 2000000000LL

static int64_t settle_ns = KC_SPEC_SETTLE_NS;
void kc_spec_direct_settle_set_(int64_t ns) { settle_ns = ns < 0 ? KC_SPEC_SETTLE_NS : ns; }

/* ---- signatures ---- */

uint64_t kc_spec_direct_sig_(const struct stat *st) {
    int64_t f[8] = {(int64_t)st->st_dev,         (int64_t)st->st_ino,         (int64_t)st->st_size,
                    (int64_t)st->st_mode,        (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
                    (int64_t)st->st_ctim.tv_sec, (int64_t)st->st_ctim.tv_nsec};
    uint64_t h = XXH3_64bits(f, sizeof f);
    return h ? h : 1;
}


kc_spec_direct *kc_spec_direct_begin_(const char *spec_path) {
    kc_spec_direct *sd = kc_calloc(1, sizeof *sd);
    if (!sd) return NULL;
    sd->t0 = kc_now_ns();
    sd->recordable = 1;
    char cwd[PATH_MAX];
    if (spec_path[0] == '/') sd->abs = kc_strdup(spec_path);
    else if (getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd) + strlen(spec_path) + 2;
        if ((sd->abs = kc_malloc(n))) snprintf(sd->abs, n, "%s/%s", cwd, spec_path);
    }
    if (!sd->abs || strchr(sd->abs, '\n')) sd->recordable = 0;
    return sd;
}

void kc_spec_direct_free_(kc_spec_direct *sd) {
    if (!sd) return;
    free(sd->abs);
    free(sd->fail_msg);
    kc_buf_free(&sd->reads);
    free(sd);
}

void kc_spec_direct_saw_(kc_spec_direct *sd, const char *rel, int stat_ok, const struct stat *before,
                         const struct stat *after) {
    if (!sd || !sd->recordable) return;
    uint64_t s = stat_ok ? kc_spec_direct_sig_(after) : 0;
    if (!stat_ok || kc_spec_direct_sig_(before) != s || !S_ISREG(after->st_mode) ||
        (!sd->verify && !kc_fs_settled(after, sd->t0 - settle_ns)) || (rel && (strchr(rel, '\n') || !*rel))) {
        sd->recordable = 0;
        return;
    }
    if (rel) kc_buf_printf(&sd->reads, "f %016llx %s\n", (unsigned long long)s, rel);
    else kc_buf_printf(&sd->reads, "s %016llx\n", (unsigned long long)s);
    sd->nreads++;
    if (sd->reads.failed) sd->recordable = 0;
}

/* ---- the memo's name and text ---- */

static int memo_path(const char *dir, const char *abs, char *out, size_t cap) {
    XXH128_hash_t h = XXH3_128bits(abs, strlen(abs));
    int n = snprintf(out, cap, "%s/spec-%016llx%016llx", dir, (unsigned long long)h.high64,
                     (unsigned long long)h.low64);
    return n > 0 && (size_t)n < cap;
}

/* "<tag> <rest>": the rest, or NULL. */
static const char *field(char **p, char *end, const char *tag) {
    char *l = kc_line_next(p, end);
    size_t n = strlen(tag);
    if (!l || strncmp(l, tag, n) != 0 || l[n] != ' ') return NULL;
    return l + n + 1;
}

/* A file named in the memo as the spec's reader named it: relative, inside the folder. */
static int rel_ok(const char *r) { return *r && r[0] != '/' && !strstr(r, ".."); }

/* One "s"/"f" line true now: well formed, and the file's signature the one it names (`dir`: the spec's
 * folder, a path joined here rather than a folder opened: one system call a file). */
static int read_true(const char *dir, const char *abs, const char *l) {
    uint64_t sig;
    struct stat st;
    if (l[0] == 's') {
        if (strlen(l) != 18 || l[1] != ' ' || !kc_hex_u64(l + 2, 16, &sig)) return 0;
        return stat(abs, &st) == 0 && S_ISREG(st.st_mode) && kc_spec_direct_sig_(&st) == sig;
    }
    if (l[0] != 'f' || strlen(l) < 20 || l[1] != ' ' || l[18] != ' ' || !kc_hex_u64(l + 2, 16, &sig) || !rel_ok(l + 19))
        return 0;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, l + 19);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           kc_spec_direct_sig_(&st) == sig;
}

/* The memo's head after its version line: the path, the graph's name (*name, into the text), and what
 * its key was computed from.  0 when a line is not as written. */
static int parse_head(char **p, char *end, const char *abs, kc_spec_direct *sd, const char **name) {
    const char *v;
    uint64_t n;
    if (!(v = field(p, end, "path")) || strcmp(v, abs) != 0) return 0;
    if (!(*name = field(p, end, "name")) || !**name) return 0;
    if (!(v = field(p, end, "kernels")) || strlen(v) != 4 || !kc_hex_u64(v, 4, &n) || n == 0 ||
        n > KC_GRAPH_MAX_KERNELS)
        return 0;
    sd->nkernels = (size_t)n;
    if (!(v = field(p, end, "toolkit")) || (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)) return 0;
    sd->toolkit = v[0] == '1';
    if (!(v = field(p, end, "toolchain")) || strlen(v) >= sizeof sd->toolchain) return 0;
    strcpy(sd->toolchain, v);
    if (!(v = field(p, end, "digest")) || !(sd->toolkit ? kc_hex_is(v, 32) : strcmp(v, "-") == 0)) return 0;
    snprintf(sd->digest, sizeof sd->digest, "%s", sd->toolkit ? v : "");
    if (!(v = field(p, end, "key")) || !kc_hex_is(v, 32) || kc_key_from_hex(&sd->key, v) != KC_OK) return 0;
    return (v = field(p, end, "key0")) && kc_hex_is(v, 32) && kc_key_from_hex(&sd->key0, v) == KC_OK;
}

/* The memo's files, each true now, then "end <count>" as its last line. */
static int parse_reads(char **p, char *end, const char *abs) {
    char dir[PATH_MAX], *l;
    const char *slash = strrchr(abs, '/');
    if (!slash || (size_t)(slash - abs) >= sizeof dir) return 0;
    snprintf(dir, sizeof dir, "%.*s", slash == abs ? 1 : (int)(slash - abs), abs);
    size_t lines = 0;
    int ok = 1, spec = 0;
    while (ok && (l = kc_line_next(p, end)) && (l[0] == 's' || l[0] == 'f')) {
        spec += l[0] == 's';
        ok = read_true(dir, abs, l);
        lines++;
    }
    char tail[48];
    snprintf(tail, sizeof tail, "end %zu", lines);
    return ok && spec == 1 && l && strcmp(l, tail) == 0 && *p == end;
}

int kc_spec_direct_parse_(char *text, size_t len, const char *abs, kc_spec_direct *sd, char **name) {
    *name = NULL;
    if (!text || !len) return 0; /* an empty memo vouches for nothing */
    char *p = text, *end = text + len, *l;
    const char *nm = NULL;
    if (!(l = kc_line_next(&p, end)) || strcmp(l, KC_SPEC_DIRECT_VERSION) != 0) return 0;
    if (!parse_head(&p, end, abs, sd, &nm) || !parse_reads(&p, end, abs)) return 0;
    *name = (char *)nm;
    return 1;
}

/* ---- the load: a description vouched but not read ---- */

/* The memo of `abs` under `dir` (NULL or "": none), read whole into *data: 1, else 0 (no error). */
static int memo_read(const char *dir, const char *abs, void **data, size_t *len) {
    char path[PATH_MAX + 64];
    if (!dir || !dir[0] || !memo_path(dir, abs, path, sizeof path)) return 0;
    kc_err_saved keep; /* no memo is no error */
    kc_err_save(&keep);
    int rrc = kc_fs_read_file(path, KC_SPEC_DIRECT_MAX, data, len, NULL);
    kc_err_restore(&keep);
    return rrc == KC_OK;
}

/* The memo's "s"/"f" lines (after its 9 head lines, before its "end" line) into sd->reads: what the
 * first-need read must find again.  0 when the memo holds a NUL byte (vouches for nothing). */
static int keep_reads(kc_spec_direct *sd, const char *text, size_t len) {
    const char *p = text, *end = text + len;
    if (!len || memchr(text, '\0', len) || end[-1] != '\n') return 0;
    for (int i = 0; i < 9; i++) {
        if (!(p = memchr(p, '\n', (size_t)(end - p)))) return 0;
        p++;
    }
    const char *last = end - 1; /* the "end N" line's start */
    if (last < p) return 0;     /* no line after the head */
    while (last > p && last[-1] != '\n') last--;
    kc_buf_put(&sd->reads, p, (size_t)(last - p));
    return !sd->reads.failed;
}

int kc_spec_direct_vouch_(kc_spec_direct *sd, const char *spec_path, kc_graph_desc **out) {
    char dir[PATH_MAX];
    void *data = NULL;
    size_t len = 0;
    if (!sd->abs || kc_cache_last_toolkit_dir_(dir, sizeof dir) != KC_OK || !memo_read(dir, sd->abs, &data, &len))
        return 0;
    char *name;
    int ok = keep_reads(sd, data, len) && kc_spec_direct_parse_(data, len, sd->abs, sd, &name);
    kc_graph_desc *d = NULL;
    if (ok && kc_graph_desc_new(&d, name) == KC_OK && (d->spec_path = kc_strdup(spec_path))) {
        d->nkernels = sd->nkernels; /* kernels NULL until read: only the hit path runs before */
        d->cacheable_memo = 1;      /* recorded only for a cacheable description */
        sd->lazy = 1;
        sd->recordable = 0;
        d->direct = sd;
        *out = d;
    } else {
        if (ok) kc_error_clear();
        kc_graph_desc_free(d);
        kc_buf_free(&sd->reads);
        sd->reads = (kc_buf){0};
        ok = 0;
    }
    free(data);
    kc_log(KC_LOG_GRAPH, "spec direct mode: %s %s", spec_path, ok ? "vouched, not read" : "read");
    return ok;
}

int kc_spec_direct_lazy_(const kc_graph_desc *d) {
    return d && d->direct && __atomic_load_n(&d->direct->lazy, __ATOMIC_ACQUIRE);
}

int kc_spec_direct_vouches_(const kc_graph_desc *d) {
    return kc_spec_direct_lazy_(d) && !__atomic_load_n(&d->direct->failed, __ATOMIC_ACQUIRE);
}

/* Move the content of `t` (read from the files) into `d`, leaving `d`'s own memos and handle.  Its
 * name and kernel count are the memo's already (same_as_memo): never changed, for a reader on
 * another thread may hold them. */
static void take_content(kc_graph_desc *d, kc_graph_desc *t) {
#define SWAP_(f)                      \
    do {                              \
        __typeof__(d->f) tmp_ = d->f; \
        d->f = t->f;                  \
        t->f = tmp_;                  \
    } while (0)
    SWAP_(backend);
    SWAP_(globals);
    SWAP_(kernels);
    t->nkernels = 0;
    SWAP_(tensors);
    SWAP_(ntensors);
    SWAP_(scratch);
    SWAP_(nscratch);
    SWAP_(steps);
    SWAP_(nsteps);
    SWAP_(zeros);
    SWAP_(nzeros);
    SWAP_(wrappers);
    SWAP_(nwrappers);
    SWAP_(symbols);
    SWAP_(nsymbols);
    SWAP_(hooks);
    SWAP_(nhooks);
    SWAP_(hook_unhashed);
    SWAP_(unhashed_hook);
    SWAP_(runtime_meta);
    SWAP_(runtime_meta_len);
    SWAP_(rargs);
    SWAP_(nrargs);
#undef SWAP_
}

static pthread_mutex_t ready_mu = PTHREAD_MUTEX_INITIALIZER;

/* The first-need read failed (under ready_mu): the error is kept, and every later reader gets it. */
static int fail_sticky(kc_spec_direct *sd, int rc) {
    sd->fail_rc = rc ? rc : KC_ERROR;
    sd->fail_msg = kc_strdup(kc_error_last()->message);
    __atomic_store_n(&sd->failed, 1, __ATOMIC_RELEASE);
    return sd->fail_rc;
}

static int failed_again(const kc_spec_direct *sd) {
    return kc_err(sd->fail_rc, "%s", sd->fail_msg ? sd->fail_msg : "the spec could not be read (load the spec again)");
}

/* The first-need read found what the memo vouched for: the same files (names and signatures, in the
 * order read), the same name and kernel count — hence the memo's key, the one a hit was served by. */
static int same_as_memo(const kc_graph_desc *d, const kc_spec_direct *now, const kc_graph_desc *t) {
    const kc_buf *m = &d->direct->reads;
    return now->recordable && !now->reads.failed && now->reads.len == m->len &&
           memcmp(now->reads.data, m->data, m->len) == 0 && strcmp(t->name, d->name) == 0 && t->nkernels == d->nkernels;
}

/* Read `d`'s files (under ready_mu) through the absolute path its load had, naming them as given. */
static int first_read(kc_graph_desc *d) {
    kc_spec_direct *sd = d->direct, *now = kc_spec_direct_begin_(sd->abs);
    if (!now || !now->abs) {
        kc_spec_direct_free_(now);
        return fail_sticky(sd, kc_err(KC_ENOMEM, "%s: out of memory", d->spec_path));
    }
    now->verify = 1;
    kc_graph_desc *t = NULL;
    int rc = kc_spec_load_whole_(&t, d->spec_path, sd->abs, now);
    if (rc)
        rc = kc_err_prefix(rc,
                           "graph '%s': its spec was vouched for unchanged when loaded, and reading it now failed "
                           "(load the spec again)",
                           d->name);
    else if (now->reads.failed) /* its lines not kept: nothing to compare */
        rc = kc_err(KC_ENOMEM, "%s: out of memory", d->spec_path);
    else if (!same_as_memo(d, now, t))
        rc = kc_err(KC_EINVAL, "%s: changed since it was loaded (load the spec again)", d->spec_path);
    kc_spec_direct_free_(now);
    if (rc) {
        kc_graph_desc_free(t);
        return fail_sticky(sd, rc);
    }
    take_content(d, t);
    kc_graph_desc_free(t);
    __atomic_store_n(&d->cacheable_memo, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&d->key_memo.mu);
    d->key_memo.gen++;
    d->key_memo.valid = 0;
    pthread_mutex_unlock(&d->key_memo.mu);
    kc_log(KC_LOG_GRAPH, "spec direct mode: %s read on first need", d->spec_path);
    __atomic_store_n(&sd->lazy, 0, __ATOMIC_RELEASE);
    return KC_OK;
}

int kc_spec_direct_ready_(const kc_graph_desc *dc) {
    if (!kc_spec_direct_lazy_(dc)) return KC_OK;
    kc_graph_desc *d = (kc_graph_desc *)dc; /* its content was always this; now it is read */
    if (__atomic_load_n(&d->direct->failed, __ATOMIC_ACQUIRE)) return failed_again(d->direct);
    pthread_mutex_lock(&ready_mu);
    int rc = KC_OK;
    if (d->direct->failed) rc = failed_again(d->direct);
    else if (d->direct->lazy) rc = first_read(d);
    pthread_mutex_unlock(&ready_mu);
    return rc;
}

/* ---- the record: after the key of a description read whole ---- */

void kc_spec_direct_record_(kc_cache *c, const kc_graph_desc *d, const char *tc, const char *tk, const kc_key *key,
                            const kc_key *key0) {
    kc_spec_direct *sd = d->direct;
    if (!sd || kc_spec_direct_lazy_(d) || !sd->recordable || !sd->abs || d->nkernels == 0 ||
        d->nkernels > KC_GRAPH_MAX_KERNELS || strchr(d->name, '\n') || strchr(tc, '\n') || !*d->name ||
        __atomic_exchange_n(&sd->recorded, 1, __ATOMIC_ACQ_REL))
        return;
    kc_err_saved keep;
    kc_err_save(&keep);
    char dir[PATH_MAX], path[PATH_MAX + 64], hk[KC_KEY_HEX_LEN + 1], hk0[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hk);
    kc_key_to_hex(key0, hk0);
    kc_buf b = {0};
    kc_buf_printf(&b, KC_SPEC_DIRECT_VERSION "\npath %s\nname %s\nkernels %04zx\ntoolkit %d\ntoolchain %s\n", sd->abs,
                  d->name, d->nkernels, tk[0] ? 1 : 0, tc);
    kc_buf_printf(&b, "digest %s\nkey %s\nkey0 %s\n", tk[0] ? tk : "-", hk, hk0);
    kc_buf_put(&b, sd->reads.data, sd->reads.len);
    kc_buf_printf(&b, "end %zu\n", sd->nreads);
    void *old = NULL;
    size_t old_len = 0;
    if (!b.failed && kc_cache_toolkit_dir_(c, true, dir, sizeof dir) == KC_OK &&
        memo_path(dir, sd->abs, path, sizeof path)) {
        /* The same memo already there (every process after the first): nothing written. */
        int same = kc_fs_read_file(path, KC_SPEC_DIRECT_MAX, &old, &old_len, NULL) == KC_OK && old_len == b.len &&
                   memcmp(old, b.data, b.len) == 0;
        if (!same && (kc_fs_mkdirs(dir, 0700) != KC_OK || kc_fs_write_atomic(path, b.data, b.len) != KC_OK))
            kc_log(KC_LOG_GRAPH, "spec direct memo not written: %s", kc_error_last()->message);
        else if (!same) kc_log(KC_LOG_GRAPH, "spec direct memo for %s: %zu files", d->spec_path, sd->nreads);
    }
    free(old);
    kc_buf_free(&b);
    kc_err_restore(&keep);
}

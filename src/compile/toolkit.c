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
 * the public kc_toolkit_headers_id (compile.h).
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
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"

#ifndef KC_CUDA_INCDIR
#define KC_CUDA_INCDIR "/usr/local/cuda/include"
#endif

#define KC_TK_MAX_DEPTH 24
#define KC_TK_MAX_FILES 200000
#define KC_TK_MEMO_VERSION "kcache-toolkit 1"

/* ---- the standard headers NVRTC lacks ----
 * Each maps the C or C++ header onto what the toolkit's libcu++ (cuda/std/…) provides under
 * NVRTC, or onto NVRTC's built-ins; their bytes are part of the digest. */

#define STD_ALIAS "namespace std { using namespace cuda::std; }\n"
#define G(n) "#ifndef KCACHE_SHIM_" n "\n#define KCACHE_SHIM_" n "\n"
#define E "#endif\n"

static const kc_header_src shims[] = {
    {"stdint.h", G("STDINT_H") "#include <cuda/std/cstdint>\n"
                 "using cuda::std::int8_t; using cuda::std::int16_t; using cuda::std::int32_t; using cuda::std::int64_t;\n"
                 "using cuda::std::uint8_t; using cuda::std::uint16_t; using cuda::std::uint32_t; using cuda::std::uint64_t;\n"
                 "using cuda::std::intptr_t; using cuda::std::uintptr_t; using cuda::std::intmax_t; using cuda::std::uintmax_t;\n"
                 "using cuda::std::int_least8_t; using cuda::std::int_least16_t; using cuda::std::int_least32_t;\n"
                 "using cuda::std::int_least64_t; using cuda::std::uint_least8_t; using cuda::std::uint_least16_t;\n"
                 "using cuda::std::uint_least32_t; using cuda::std::uint_least64_t; using cuda::std::int_fast8_t;\n"
                 "using cuda::std::int_fast16_t; using cuda::std::int_fast32_t; using cuda::std::int_fast64_t;\n"
                 "using cuda::std::uint_fast8_t; using cuda::std::uint_fast16_t; using cuda::std::uint_fast32_t;\n"
                 "using cuda::std::uint_fast64_t;\n" E},
    {"cstdint", G("CSTDINT") "#include <stdint.h>\n" STD_ALIAS E},
    {"stddef.h", G("STDDEF_H") "#include <cuda/std/cstddef>\n"
                 "using cuda::std::size_t; using cuda::std::ptrdiff_t; using cuda::std::nullptr_t;\n"
                 "#ifndef offsetof\n#define offsetof(t, m) __builtin_offsetof(t, m)\n#endif\n" E},
    {"cstddef", G("CSTDDEF") "#include <stddef.h>\n" STD_ALIAS E},
    {"limits.h", G("LIMITS_H") "#include <cuda/std/climits>\n" E},
    {"climits", G("CLIMITS") "#include <cuda/std/climits>\n" E},
    {"float.h", G("FLOAT_H")
                "#define FLT_RADIX 2\n#define FLT_MANT_DIG 24\n#define DBL_MANT_DIG 53\n"
                "#define FLT_DIG 6\n#define DBL_DIG 15\n#define FLT_MIN_EXP (-125)\n#define DBL_MIN_EXP (-1021)\n"
                "#define FLT_MAX_EXP 128\n#define DBL_MAX_EXP 1024\n"
                "#define FLT_MAX 3.40282346638528859812e+38F\n#define DBL_MAX 1.79769313486231570815e+308\n"
                "#define FLT_MIN 1.17549435082228750797e-38F\n#define DBL_MIN 2.22507385850720138309e-308\n"
                "#define FLT_EPSILON 1.1920928955078125e-07F\n#define DBL_EPSILON 2.22044604925031308085e-16\n"
                "#define FLT_TRUE_MIN 1.40129846432481707092e-45F\n#define DBL_TRUE_MIN 4.94065645841246544177e-324\n" E},
    {"cfloat", G("CFLOAT") "#include <float.h>\n" E},
    {"math.h", G("MATH_H") "/* CUDA's math functions (sqrtf, expf, …) are built into NVRTC. */\n" E},
    {"cmath", G("CMATH") "#include <cuda/std/cmath>\n" STD_ALIAS E},
    {"assert.h", "#undef assert\n#ifdef NDEBUG\n#define assert(e) ((void)0)\n#else\n"
                 "extern \"C\" __host__ __device__ void __assertfail(const char *, const char *, unsigned, const char *,"
                 " unsigned long);\n"
                 "#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))\n#endif\n"},
    {"cassert", "#include <assert.h>\n"},
    {"type_traits", G("TYPE_TRAITS") "#include <cuda/std/type_traits>\n" STD_ALIAS E},
    {"limits", G("LIMITS") "#include <cuda/std/limits>\n" STD_ALIAS E},
    {"utility", G("UTILITY") "#include <cuda/std/utility>\n" STD_ALIAS E},
    {"cstdlib", G("CSTDLIB") "#include <cuda/std/cstdlib>\n" STD_ALIAS E},
    {"cstring", G("CSTRING") "#include <cuda/std/cstring>\n" STD_ALIAS E},
    {"array", G("ARRAY") "#include <cuda/std/array>\n" STD_ALIAS E},
    {"tuple", G("TUPLE") "#include <cuda/std/tuple>\n" STD_ALIAS E},
    {"functional", G("FUNCTIONAL") "#include <cuda/std/functional>\n" STD_ALIAS E},
    {"complex", G("COMPLEX") "#include <cuda/std/complex>\n" STD_ALIAS E},
};
#undef G
#undef E
#undef STD_ALIAS

const kc_header_src *kc_toolkit_shims(size_t *n) {
    *n = KC_ARRAY_LEN(shims);
    return shims;
}

/* ---- where the headers are ---- */

static int is_toolkit_include(const char *dir) {
    char p[PATH_MAX];
    struct stat st;
    int n = snprintf(p, sizeof p, "%s/cuda_fp16.h", dir);
    return n > 0 && (size_t)n < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The include folder, resolved (realpath): KCACHE_CUDA_INCLUDE, else the toolkit kcache was built with. */
static int include_dir(char out[PATH_MAX]) {
    const char *env = getenv("KCACHE_CUDA_INCLUDE");
    const char *cand[] = {KC_CUDA_INCDIR, "/usr/local/cuda/include"};
    if (env && *env) {
        if (!realpath(env, out) || !is_toolkit_include(out))
            return kc_err(KC_ENONVRTC, "KCACHE_CUDA_INCLUDE='%s' is not a CUDA toolkit include folder (no cuda_fp16.h)", env);
        return KC_OK;
    }
    for (size_t i = 0; i < KC_ARRAY_LEN(cand); i++)
        if (realpath(cand[i], out) && is_toolkit_include(out)) return KC_OK;
    return kc_err(KC_ENONVRTC, "the CUDA toolkit's headers are not here (looked in %s and /usr/local/cuda/include; "
                  "set KCACHE_CUDA_INCLUDE to the toolkit's include folder)", KC_CUDA_INCDIR);
}

int kc_toolkit_inputs_for(const char *file, kc_toolkit_inputs *in) {
    memset(in, 0, sizeof *in);
    char dir[PATH_MAX];
    int rc = include_dir(dir);
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

typedef struct tfile {
    char *rel;
    struct stat st;
} tfile;

typedef struct walk {
    tfile *v;
    size_t n, cap;
    int rc;
} walk;

static int add_file(walk *w, const char *rel, const struct stat *st) {
    if (w->n == KC_TK_MAX_FILES) return kc_err(KC_EINVAL, "the toolkit's include folder holds more than %d files", KC_TK_MAX_FILES);
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        tfile *v = kc_realloc(w->v, cap * sizeof *v);
        if (!v) return kc_err(KC_ENOMEM, "toolkit digest: out of memory");
        w->v = v, w->cap = cap;
    }
    if (!(w->v[w->n].rel = kc_strdup(rel))) return kc_err(KC_ENOMEM, "toolkit digest: out of memory");
    w->v[w->n++].st = *st;
    return KC_OK;
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
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0) continue; /* a dangling link: nothing NVRTC could read */
        if (S_ISDIR(st.st_mode)) {
            int sfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            rc = sfd < 0 ? kc_err_errno(errno, "cannot read the toolkit folder %s/%s", root, sub)
                         : walk_dir(w, sfd, root, sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            rc = add_file(w, sub, &st);
        }
    }
    closedir(d);
    return rc;
}

static int walk_root(walk *w, const char *root) {
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return kc_err_errno(errno, "cannot read the toolkit folder %s", root);
    return walk_dir(w, fd, root, "", 0);
}

static int by_rel(const void *a, const void *b) { return strcmp(((const tfile *)a)->rel, ((const tfile *)b)->rel); }

static void walk_free(walk *w) {
    for (size_t i = 0; i < w->n; i++) free(w->v[i].rel);
    free(w->v);
}

/* The local signature: what changes when any file is added, removed, replaced or written. */
static uint64_t signature(const char *root, const walk *w) {
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
    XXH3_64bits_update(s, root, strlen(root) + 1);
    for (size_t i = 0; i < w->n; i++) {
        const struct stat *st = &w->v[i].st;
        int64_t f[8] = {(int64_t)st->st_size, (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
                        (int64_t)st->st_ctim.tv_sec, (int64_t)st->st_ctim.tv_nsec, (int64_t)st->st_ino,
                        (int64_t)st->st_dev, (int64_t)st->st_mode};
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
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(h.high64 >> (56 - 8 * i)), b[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
    kc_hex(b, 16, out);
    return KC_OK;
}

/* The memo file of an installation: "<memo_dir>/<xxh64(root)>.toolkit". */
static void memo_path(const char *memo_dir, const char *root, char *out, size_t cap) {
    snprintf(out, cap, "%s/%016llx.toolkit", memo_dir, (unsigned long long)XXH3_64bits(root, strlen(root)));
}

static int memo_read(const char *path, uint64_t sig, char out[33]) {
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

/* The process's memo: one toolkit per process (KCACHE_CUDA_INCLUDE is read once). */
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static char memo_digest[33];

int kc_toolkit_digest(const char *memo_dir, char out[33]) {
    pthread_mutex_lock(&memo_mu);
    if (memo_digest[0]) {
        memcpy(out, memo_digest, 33);
        pthread_mutex_unlock(&memo_mu);
        return KC_OK;
    }
    char root[PATH_MAX];
    int rc = include_dir(root);
    walk w = {0};
    if (!rc) rc = walk_root(&w, root);
    if (!rc) {
        qsort(w.v, w.n, sizeof *w.v, by_rel);
        uint64_t sig = signature(root, &w);
        char mp[PATH_MAX];
        if (memo_dir) memo_path(memo_dir, root, mp, sizeof mp);
        if (memo_dir && memo_read(mp, sig, out)) {
            kc_log(KC_LOG_COMPILE, "toolkit headers %s: %s (memo)", root, out);
        } else if ((rc = content_digest(root, &w, out)) == KC_OK) {
            kc_log(KC_LOG_COMPILE, "toolkit headers %s: %s (%zu files hashed)", root, out, w.n);
            if (memo_dir) {
                char text[128];
                int n = snprintf(text, sizeof text, KC_TK_MEMO_VERSION "\nsig %016llx\ndigest %s\n", (unsigned long long)sig, out);
                /* A memo that cannot be written costs the next process a hash, nothing more. */
                if (kc_fs_mkdirs(memo_dir, 0700) != KC_OK || kc_fs_write_atomic(mp, text, (size_t)n) != KC_OK)
                    kc_log(KC_LOG_COMPILE, "toolkit memo not written: %s", kc_error_last()->message);
            }
        }
    }
    walk_free(&w);
    if (rc == KC_OK) {
        memcpy(memo_digest, out, 33);
    }
    pthread_mutex_unlock(&memo_mu);
    return rc;
}

int kc_toolkit_headers_id(char out[33]) {
    if (!out) return kc_err(KC_EINVAL, "kc_toolkit_headers_id: out is NULL");
    return kc_toolkit_digest(NULL, out);
}

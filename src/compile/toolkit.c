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
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "kcache/entry.h"
#include "../common/internal.h"
#include "../config/config.h"

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
/* What glibc's <math.h> defines (C99, and the M_ constants of POSIX and GNU), each only where
 * not yet defined (libcu++'s <cuda/std/cmath> defines INFINITY, NAN and FP_* under NVRTC).  NVRTC
 * has no __builtin_huge_val/inff/nanf: the IEEE bit patterns, through __builtin_bit_cast (constant
 * expressions, as glibc's are; what libcu++'s numeric_limits does under NVRTC). */
#define MATH_DEF(n, v) "#ifndef " n "\n#define " n " " v "\n#endif\n"
#define MATH_CONSTANTS                                                                                                   \
    MATH_DEF("HUGE_VAL", "(__builtin_bit_cast(double, 0x7ff0000000000000ull))")                                       \
    MATH_DEF("HUGE_VALF", "(__builtin_bit_cast(float, 0x7f800000u))") MATH_DEF("HUGE_VALL", "((long double)HUGE_VAL)")  \
    MATH_DEF("INFINITY", "(__builtin_bit_cast(float, 0x7f800000u))")                                                  \
    MATH_DEF("NAN", "(__builtin_bit_cast(float, 0x7fc00000u))") MATH_DEF("FP_NAN", "0") MATH_DEF("FP_INFINITE", "1")    \
    MATH_DEF("FP_ZERO", "2") MATH_DEF("FP_SUBNORMAL", "3") MATH_DEF("FP_NORMAL", "4")                                  \
    MATH_DEF("FP_ILOGB0", "(-2147483647 - 1)") MATH_DEF("FP_ILOGBNAN", "(-2147483647 - 1)")                           \
    MATH_DEF("MAXFLOAT", "3.40282347e+38F")                                                                          \
    MATH_DEF("M_E", "2.7182818284590452354") MATH_DEF("M_LOG2E", "1.4426950408889634074")                              \
    MATH_DEF("M_LOG10E", "0.43429448190325182765") MATH_DEF("M_LN2", "0.69314718055994530942")                         \
    MATH_DEF("M_LN10", "2.30258509299404568402") MATH_DEF("M_PI", "3.14159265358979323846")                           \
    MATH_DEF("M_PI_2", "1.57079632679489661923") MATH_DEF("M_PI_4", "0.78539816339744830962")                          \
    MATH_DEF("M_1_PI", "0.31830988618379067154") MATH_DEF("M_2_PI", "0.63661977236758134308")                          \
    MATH_DEF("M_2_SQRTPI", "1.12837916709551257390") MATH_DEF("M_SQRT2", "1.41421356237309504880")                     \
    MATH_DEF("M_SQRT1_2", "0.70710678118654752440")                                                                  \
    MATH_DEF("M_Ef", "2.7182818284590452354f") MATH_DEF("M_LOG2Ef", "1.4426950408889634074f")                          \
    MATH_DEF("M_LOG10Ef", "0.43429448190325182765f") MATH_DEF("M_LN2f", "0.69314718055994530942f")                     \
    MATH_DEF("M_LN10f", "2.30258509299404568402f") MATH_DEF("M_PIf", "3.14159265358979323846f")                       \
    MATH_DEF("M_PI_2f", "1.57079632679489661923f") MATH_DEF("M_PI_4f", "0.78539816339744830962f")                      \
    MATH_DEF("M_1_PIf", "0.31830988618379067154f") MATH_DEF("M_2_PIf", "0.63661977236758134308f")                      \
    MATH_DEF("M_2_SQRTPIf", "1.12837916709551257390f") MATH_DEF("M_SQRT2f", "1.41421356237309504880f")                 \
    MATH_DEF("M_SQRT1_2f", "0.70710678118654752440f")
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
    {"math.h", G("MATH_H") "/* CUDA's math functions (sqrtf, expf, …) are built into NVRTC; the constants are glibc's. */\n"
               MATH_CONSTANTS E},
    /* libcu++ defines INFINITY and NAN its own way under NVRTC, unguarded: ours give way to its. */
    {"cmath", G("CMATH") "#undef INFINITY\n#undef NAN\n#include <cuda/std/cmath>\n#include <math.h>\n" STD_ALIAS E},
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
#undef MATH_CONSTANTS
#undef MATH_DEF

static const kc_header_src *shims_now = shims; /* kc_toolkit_shims_set_: another set, for tests */
static size_t nshims_now = KC_ARRAY_LEN(shims);

const kc_header_src *kc_toolkit_shims(size_t *n) {
    *n = nshims_now;
    return shims_now;
}

void kc_toolkit_shims_set_(const kc_header_src *v, size_t n) {
    shims_now = v ? v : shims;
    nshims_now = v ? n : KC_ARRAY_LEN(shims);
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
    const char *env = kc_config_process()->v.cuda_include;
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

typedef struct tfile {
    char *rel;
    struct stat st;
} tfile;

typedef struct tlist {
    tfile *v;
    size_t n, cap;
} tlist;

/* The tree: its regular files and its folders (the root as "."), each with its stat. */
typedef struct walk {
    tfile *v; /* the files */
    size_t n, cap;
    tlist dirs;
    size_t unseen; /* links to files, dangling links: a read through one the watch or a folder's stat would miss */
} walk;

static int add_to(tlist *l, size_t total, const char *rel, const struct stat *st) {
    if (total >= KC_TK_MAX_FILES) return kc_err(KC_EINVAL, "the toolkit's include folder holds more than %d files", KC_TK_MAX_FILES);
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
            int sfd = (rc = add_to(&w->dirs, w->n + w->dirs.n, sub, &st)) ? -1
                      : openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            rc = rc ? rc : sfd < 0 ? kc_err_errno(errno, "cannot read the toolkit folder %s/%s", root, sub)
                                   : walk_dir(w, sfd, root, sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            struct stat lst;
            if (de->d_type == DT_LNK ||
                (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode)))
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
    int rc = fstat(fd, &st) != 0 ? kc_err_errno(errno, "cannot read the toolkit folder %s", root) : add_to(&w->dirs, 0, ".", &st);
    if (rc) {
        close(fd);
        return rc;
    }
    return walk_dir(w, fd, root, "", 0);
}

static int by_rel(const void *a, const void *b) { return strcmp(((const tfile *)a)->rel, ((const tfile *)b)->rel); }

static void walk_free(walk *w) {
    for (size_t i = 0; i < w->n; i++) free(w->v[i].rel);
    for (size_t i = 0; i < w->dirs.n; i++) free(w->dirs.v[i].rel);
    free(w->v);
    free(w->dirs.v);
    memset(w, 0, sizeof *w);
}

/* What a file's or folder's stat says about it: any write, replacement or rename changes one of these. */
static void stat_fields(const struct stat *st, int64_t f[8]) {
    f[0] = (int64_t)st->st_size, f[1] = (int64_t)st->st_mtim.tv_sec, f[2] = (int64_t)st->st_mtim.tv_nsec;
    f[3] = (int64_t)st->st_ctim.tv_sec, f[4] = (int64_t)st->st_ctim.tv_nsec, f[5] = (int64_t)st->st_ino;
    f[6] = (int64_t)st->st_dev, f[7] = (int64_t)st->st_mode;
}

static uint64_t shims_sig(void);

/* The local signature: what changes when any file is added, removed, replaced or written — and
 * when the in-memory standard headers do (another build of kcache): they are in the digest the
 * memo maps this signature to, so a memo written under other shims must not vouch for it. */
static uint64_t signature(const char *root, const walk *w) {
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
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(h.high64 >> (56 - 8 * i)), b[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
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
static char memo_digest[33];
static char memo_root[PATH_MAX];
static walk memo_walk;
static int64_t memo_walk_began; /* CLOCK_REALTIME, as file times: when the verifying walk began */
static uint64_t memo_walk_sig;  /* signature() of memo_walk */
static int memo_walks; /* whole walks this process made (kc_toolkit_walks_) */

int kc_toolkit_digest(const char *memo_dir, char out[33]) {
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
            if (memo_dir) {
                char text[128];
                int n = snprintf(text, sizeof text, KC_TK_MEMO_VERSION "\nsig %016llx\ndigest %s\n", (unsigned long long)sig, out);
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
static int walk_kept(void) {
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

static pthread_mutex_t direct_mu = PTHREAD_MUTEX_INITIALIZER;
static char direct_root[PATH_MAX];
static int direct_root_rc = -1;

/* The include folder as this process first found it (direct_root never changes once set). */
static int direct_root_known(void) {
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
    return kc_toolkit_digest(NULL, out);
}

/* ---- direct mode ([Note: toolkit direct mode] in toolkit.h) ---- */

/* The version line names how kcache has NVRTC read the tree ([Note: toolkit includes]): a kcache
 * that reads it otherwise trusts none of these manifests. */
#define KC_TK_DIRECT_VERSION "kcache-toolkit-direct 2 (" KC_TK_MEMO_VERSION "; -I<root> -I<root>/cccl; /dev/null/<file>)"
#define KC_TK_DIRECT_MAX (16u << 20)

/* One file's or folder's stat_fields, hashed. */
static uint64_t stat_sig(const struct stat *st) {
    int64_t f[8];
    stat_fields(st, f);
    uint64_t h = XXH3_64bits(f, sizeof f);
    return h ? h : 1;
}

/* The in-memory standard headers: a direct manifest made by another build of kcache vouches for nothing. */
static uint64_t shims_sig(void) {
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

static int settled(const struct stat *st, int64_t before_ns) {
    int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
    return m < before_ns && c < before_ns;
}

struct kc_toolkit_watch {
    int fd;
    int *dir_of_wd; /* watch descriptor -> folder index in memo_walk.dirs, -1 none */
    size_t nwd;
};

void kc_toolkit_watch_begin(kc_toolkit_watch **out) {
    *out = NULL;
    if (!walk_kept()) return;
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
    for (size_t i = 0; i < nwd; i++) w->dir_of_wd[i] = -1;
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
    *out = w;
    return;
fail:
    if (w) free(w->dir_of_wd);
    free(w);
}

/* The files opened under the tree since the watch began, as a flag per file of memo_walk:
 * 0 when the reads cannot be known whole (the queue overflowed, a folder went, a file not in
 * the walk was opened). */
static int watch_reads(kc_toolkit_watch *w, unsigned char *read_flag) {
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
            const char *dir = memo_walk.dirs.v[w->dir_of_wd[ev->wd]].rel;
            char rel[PATH_MAX];
            int n = strcmp(dir, ".") == 0 ? snprintf(rel, sizeof rel, "%s", ev->name)
                                          : snprintf(rel, sizeof rel, "%s/%s", dir, ev->name);
            if (n < 0 || (size_t)n >= sizeof rel) return 0;
            tfile key = {rel, {0}};
            const tfile *f = bsearch(&key, memo_walk.v, memo_walk.n, sizeof *memo_walk.v, by_rel);
            if (!f) return 0; /* made after the walk: not in the digest the key holds */
            read_flag[f - memo_walk.v] = 1;
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
static void record_manifest(const char *memo_dir, const char *name, const unsigned char *read_flag, int64_t settle_before) {
    /* inotify reports an open under the folder of the file reached, after links: a header that is
     * a link to a file elsewhere would be read unseen; a dangling link's target may appear
     * outside the tree, where no folder's stat changes.  Such a tree is always walked. */
    if (memo_walk.unseen) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest for %s (%zu links to files or dangling in %s)", name,
               memo_walk.unseen, memo_root);
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
        rc = !settled(&memo_walk.dirs.v[i].st, settle_before) || sig_now(rfd, memo_walk.dirs.v[i].rel) != sig
                 ? KC_EINVAL
                 : put_line(&b, 'd', sig, memo_walk.dirs.v[i].rel);
    }
    for (size_t i = 0; rc == KC_OK && i < memo_walk.n; i++) {
        if (!read_flag[i]) continue;
        uint64_t sig = stat_sig(&memo_walk.v[i].st);
        rc = !settled(&memo_walk.v[i].st, settle_before) || sig_now(rfd, memo_walk.v[i].rel) != sig
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
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest for %s (the tree changed during the compile or "
               "just before it: [Note: too new to vouch for])", name);
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
/* A number as reads_encode writes it: lowercase hex, no sign, prefix or leading zero, at most
 * 15 digits; *end after it.  0 when it is not one. */
static int hex_number(const char *p, const char **end, unsigned long long *v) {
    size_t n = 0;
    *v = 0;
    for (; n < 16 && ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')); n++)
        *v = (*v << 4) | (unsigned long long)(p[n] <= '9' ? p[n] - '0' : p[n] - 'a' + 10);
    *end = p + n;
    return n >= 1 && n <= 15 && !(n > 1 && p[0] == '0');
}

static int reads_decode(const char *value, unsigned char *read_flag) {
    if (strlen(value) < 34 || strncmp(value, memo_digest, 32) != 0 || value[32] != ' ') return 0;
    const char *end;
    unsigned long long n;
    if (!hex_number(value + 33, &end, &n) || n != memo_walk.n || *end != ' ') return 0;
    const char *p = end + 1;
    if (strcmp(p, "-") == 0) return 1;
    unsigned long long at = 0;
    for (int first = 1;; first = 0) {
        unsigned long long d;
        if (!hex_number(p, &end, &d) || (!first && d == 0) || d >= n || at + d >= n) return 0;
        at += d;
        read_flag[at] = 1;
        if (*end == '\0') return 1;
        if (*end != ',') return 0;
        p = end + 1;
    }
}

void kc_toolkit_watch_end(kc_toolkit_watch *w, const char *memo_dir, const char *name, int record, char **reads) {
    if (reads) *reads = NULL;
    if (!w) return;
    unsigned char *read_flag = record && memo_dir && name ? kc_calloc(memo_walk.n ? memo_walk.n : 1, 1) : NULL;
    int whole = read_flag && watch_reads(w, read_flag);
    /* The signatures are the walk's, so is the digest: settled before the walk began. */
    int64_t settle_before = memo_walk_began - KC_TK_SETTLE_NS;
    close(w->fd);
    free(w->dir_of_wd);
    free(w);
    if (whole) {
        record_manifest(memo_dir, name, read_flag, settle_before);
        if (reads) *reads = reads_encode(read_flag);
    } else if (record) {
        kc_log(KC_LOG_COMPILE, "toolkit headers: no direct manifest for %s (the reads could not be known whole)",
               name ? name : "?");
    }
    free(read_flag);
}

void kc_toolkit_direct_from_reads(const char *memo_dir, const char *name, const char *reads) {
    if (!walk_kept() || !memo_dir || !name || !reads) return;
    unsigned char *read_flag = kc_calloc(memo_walk.n ? memo_walk.n : 1, 1);
    if (read_flag && reads_decode(reads, read_flag))
        record_manifest(memo_dir, name, read_flag, memo_walk_began - KC_TK_SETTLE_NS);
    else
        kc_log(KC_LOG_COMPILE, "toolkit headers: the entry's reads are not of this tree; no direct manifest for %s", name);
    free(read_flag);
}

static int hex16(const char *s, uint64_t *v);

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
    if (seen && nseen < KC_TK_SEEN_CAP / 2) { /* at most half full: every probe ends */
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
    if (n <= 19 || l[0] != kind || l[1] != ' ' || l[18] != ' ' || !hex16(l + 2, &sig)) return 0;
    uint64_t h = XXH3_64bits(l, n);
    h = h ? h : 1;
    if (seen_has(h)) return 1;
    if (sig_now(rfd, l + 19) != sig) return 0;
    seen_add(h);
    return 1;
}

/* The next line of [*p, end): NUL-terminated in place; NULL at the end or on a line without '\n'. */
static char *next_line(char **p, char *end) {
    if (*p >= end) return NULL;
    char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return NULL;
    *nl = '\0';
    char *line = *p;
    *p = nl + 1;
    return line;
}

static int hex16(const char *s, uint64_t *v) {
    *v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return 0;
        *v = (*v << 4) | (uint64_t)d;
    }
    return 1;
}

static int is_hex32(const char *s) {
    return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

static int direct_check(char *text, size_t len, char out[33]) {
    char *p = text, *end = text + len, *l;
    char want[PATH_MAX + 64];
    if (!(l = next_line(&p, end)) || strcmp(l, KC_TK_DIRECT_VERSION) != 0) return 0;
    if (!direct_root_known()) return 0;
    snprintf(want, sizeof want, "root %s", direct_root);
    if (!(l = next_line(&p, end)) || strcmp(l, want) != 0) return 0;
    snprintf(want, sizeof want, "shims %016llx", (unsigned long long)shims_sig());
    if (!(l = next_line(&p, end)) || strcmp(l, want) != 0) return 0;
    if (!(l = next_line(&p, end)) || strncmp(l, "digest ", 7) != 0 || !is_hex32(l + 7)) return 0;
    char digest[33];
    memcpy(digest, l + 7, 33);
    int rfd = open(direct_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) return 0;
    size_t lines = 0;
    int ok = 1;
    while (ok && (l = next_line(&p, end)) && l[0] == 'd') ok = line_true(rfd, l, 'd'), lines++;
    ok = ok && lines > 0; /* the root folder at least */
    while (ok && l && l[0] == 'f') {
        ok = line_true(rfd, l, 'f');
        lines++;
        l = next_line(&p, end);
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

int kc_toolkit_direct(const char *memo_dir, const char *name, char out[33]) {
    out[0] = '\0';
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cacheable.c — whether a kernel may be cached at all, and which files its texts could make
 * NVRTC read: a preprocessing-token walk of its source, listed headers, options and entry name.
 *
 * The one idea: a kernel whose compile may differ from one run to the next (__DATE__, __TIME__,
 * __TIMESTAMP__, however spelled or pasted) or that may read a file kcache cannot name is
 * compiled but never stored, with the reason; the scan is conservative on purpose (a bypass
 * costs a compile, a stale hit a wrong kernel) and done once per process per text
 * ([Note: scanned once per process]).
 *
 * Callers: graph/lookup.c (kc_kernel_cacheable, compile.h), compile/nvrtc.c
 * (kc_options_check_includes, options.h).  Must not: read files, or preprocess.
 *
 * [Note: cacheability]  A kernel is compiled but not stored when its texts (source, listed
 * headers, options, entry name expression — NVRTC compiles the last too) may expand
 * __DATE__, __TIME__ or __TIMESTAMP__:
 * - the name as an identifier in code, seen through line splices (backslash-newline and
 *   backslash-CR-LF; NVRTC does not splice "\ " + newline), skipping comments, string and
 *   character literals, raw strings R"d(...)d" (a quote inside would hide what follows) and
 *   pp-numbers (the digit separator in 1'000 starts no character literal);
 * - the name formed by token pasting: only whole identifier tokens can be pasted, so the
 *   name must be a concatenation of identifiers of the texts (__TI ## ME__, CAT(__TI, ME__),
 *   pieces given by -D).  A ## in the kernel's texts is not required: NVRTC's own headers,
 *   always there, define _NV_PASTE5 and _NV_CONCAT_EVAL1 (any tokens) and __location__(a)
 *   (__##a##__, so "__" counts as always there), and CCCL has more.  An identifier can only
 *   be pasted as a macro argument (inside parentheses), from a directive (a #define's body),
 *   an option or the entry name — unless a ')' closes what no '(' of the text opened (a
 *   macro opened it), and then every identifier counts.  So `x = __TIME/(comment)/__;` is
 *   stored (two tokens, not the macro: NVRTC agrees), f(__TIME/(comment)/__) is not, and
 *   neither is a kernel that passes T, I, M and E to a macro.  Conservative on purpose: a
 *   bypass costs a compile, a stale hit a wrong kernel.  __TIM\u0045__ is another
 *   identifier for NVRTC (checked);
 * - a computed #include or __has_include, or a literal one NVRTC would read from disk.
 * Deterministic, so left alone: __FILE__ and __BASE_FILE__ (the program's name, in the key),
 * __LINE__, __COUNTER__, __CUDACC_VER_*__ (the toolchain is in the key), #include __FILE__
 * (found like any quoted name).  NVRTC has trigraphs off (??= is not #).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "kcache/compile.h"
#include "options.h"

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* ---- the scanner: a preprocessing-token walk, enough for [Note: cacheability] ---- */

/* The first M_TIMED make a kernel uncacheable; the others name the main file, which a precompiled
 * header would keep from the compile that made it (kc_kernel_names_main_file). */
enum { M_DATE, M_TIME, M_STAMP, M_TIMED, M_BASE = M_TIMED, M_FNAME, M_N, M_MAX = 13 };
static const char *const macros[M_N] = {"__DATE__", "__TIME__", "__TIMESTAMP__", "__BASE_FILE__", "__FILE_NAME__"};
/* Every character of the names above ("_DATEIMSPBFLN"): a test per byte, not a strspn per identifier. */
static int is_macro_char(int c) {
    return c == '_' || c == 'D' || c == 'A' || c == 'T' || c == 'E' || c == 'I' || c == 'M' || c == 'S' || c == 'P' ||
           c == 'B' || c == 'F' || c == 'L' || c == 'N';
}
enum { W_SOURCE, W_HEADER, W_OPTION, W_NAME, W_N };
enum { DIR_NONE, DIR_NAME, DIR_OPERAND, DIR_DEFINE, DIR_OTHER };

typedef struct scan {
    const kc_kernel_src *k;
    int where;
    const char *where_name; /* the header being scanned */
    int direct;             /* where * M_TIMED + macro of the first plain use of a timed one, or -1 */
    int names;              /* __BASE_FILE__ or __FILE_NAME__ used as written */
    unsigned char piece[2][M_N][M_MAX + 1][M_MAX + 1]; /* macro bytes [i, j) appear as an identifier: [0] where
                                                   * it could be pasted, [1] anywhere */
    int unbalanced;                                    /* a ')' closes what no '(' in the text opened */
    int computed;                                      /* 1: #include MACRO; 2: __has_include(MACRO) */
    int bad;                                           /* 1: an absolute path; 2: ".." in a toolkit kernel */
    int bad_has;                                       /* ... in __has_include */
    char bad_name[256], bad_in[128];
} scan;

/* Line splices: backslash-newline (or CR-LF) vanish before anything else (not in raw strings). */
#if defined(__GNUC__)
#define KC_HOT_INLINE inline __attribute__((always_inline)) /* per character of every kernel a process looks up */
#else
#define KC_HOT_INLINE inline
#endif
static KC_HOT_INLINE const char *unsplice(const char *p) {
    for (;;) {
        if (p[0] == '\\' && p[1] == '\n') p += 2;
        else if (p[0] == '\\' && p[1] == '\r' && p[2] == '\n') p += 3;
        else return p;
    }
}
static KC_HOT_INLINE int peek(const char *p) { return (unsigned char)*unsplice(p); }
static int peek2(const char *p) {
    p = unsplice(p);
    return *p ? (unsigned char)*unsplice(p + 1) : 0;
}
static KC_HOT_INLINE int get(const char **pp) {
    const char *p = unsplice(*pp);
    int c = (unsigned char)*p;
    *pp = c ? p + 1 : p;
    return c;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_id_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
static int is_id(int c) { return is_id_start(c) || is_digit(c); }
static int ucn_next(const char *p) { return peek(p) == '\\' && (peek2(p) == 'u' || peek2(p) == 'U'); }

static const char *skip_block_comment(const char *p, int *newline) {
    for (int c; (c = get(&p));) {
        if (c == '\n') *newline = 1;
        if (c == '*' && peek(p) == '/') return get(&p), p;
    }
    return p;
}

/* A // comment's rest, up to its newline (left for the caller); a spliced newline continues it. */
static const char *skip_line_comment(const char *p) {
    for (;;) {
        const char *nl = strchr(p, '\n');
        if (!nl) return p + strlen(p);
        if (nl > p && nl[-1] == '\\') p = nl + 1;                             /* backslash-newline */
        else if (nl - p >= 2 && nl[-1] == '\r' && nl[-2] == '\\') p = nl + 1; /* backslash-CR-LF */
        else return nl;
    }
}

/* Spaces and comments on this line (not the newline). */
static const char *skip_blank(const char *p) {
    for (;;) {
        int c = peek(p), nl = 0;
        if (is_space(c)) get(&p);
        else if (c == '/' && peek2(p) == '*') get(&p), get(&p), p = skip_block_comment(p, &nl);
        else return p;
    }
}

static const char *skip_quoted(const char *p, int q) {
    for (;;) {
        const char *before = p;
        int c = get(&p);
        if (!c) return p;
        if (c == '\n') return before; /* unterminated: NVRTC's error; the newline still ends the line */
        if (c == '\\') get(&p);
        else if (c == q) return p;
    }
}

/* After R" : the delimiter up to '(' and the body up to )delim" are raw (splices undone). */
static const char *skip_raw(const char *p) {
    char end[20] = ")";
    size_t n = 1;
    while (n < 17 && p[n - 1] && p[n - 1] != '(' && !strchr(" )\\\t\v\f\n", p[n - 1])) end[n] = p[n - 1], n++;
    if (p[n - 1] != '(') return skip_quoted(p, '"'); /* not a raw string after all: NVRTC's error */
    end[n] = '"', end[n + 1] = '\0';
    const char *e = strstr(p + n, end);
    return e ? e + n + 1 : p + strlen(p);
}

static const char *skip_ppnumber(const char *p) {
    for (;;) {
        int d = peek(p);
        if (d == 'e' || d == 'E' || d == 'p' || d == 'P') {
            get(&p);
            if (peek(p) == '+' || peek(p) == '-') get(&p);
        } else if (is_id(d) || d == '.') get(&p);
        else if (d == '\'' && is_id(peek2(p))) get(&p), get(&p);
        else if (ucn_next(p)) get(&p), get(&p);
        else return p;
    }
}

static int has_dotdot(const char *s) {
    for (const char *p = s; (p = strstr(p, "..")); p += 2)
        if ((p == s || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')) return 1;
    return 0;
}

/* A literal header name (after the opening quote or '<'): the files NVRTC would read from disk. */
static const char *header_name(scan *s, const char *p, int close, int has) {
    char name[sizeof s->bad_name];
    size_t n = 0;
    for (;;) {
        const char *before = p;
        int c = get(&p);
        if (!c || c == close) break;
        if (c == '\n') {
            p = before;
            break;
        }
        if (n + 1 < sizeof name) name[n++] = (char)c;
    }
    name[n] = '\0';
    for (size_t h = 0; h < s->k->nheaders; h++)
        if (s->k->headers[h].name && strcmp(s->k->headers[h].name, name) == 0) return p; /* in memory */
    int bad = name[0] == '/' ? 1 : (s->k->flags & KC_KERNEL_TOOLKIT_HEADERS) && has_dotdot(name) ? 2 : 0;
    if (bad && !s->bad) {
        s->bad = bad, s->bad_has = has;
        snprintf(s->bad_name, sizeof s->bad_name, "%s", name);
        if (s->where == W_HEADER) snprintf(s->bad_in, sizeof s->bad_in, "header %s", s->where_name);
        else snprintf(s->bad_in, sizeof s->bad_in, "%s", s->where == W_SOURCE ? "the source" : "an option");
    }
    return p;
}

/* Macro m used as written. */
static void on_use(scan *s, int m) {
    if (m >= M_TIMED) s->names = 1;
    else if (s->direct < 0) s->direct = s->where * M_TIMED + m;
}

static void on_identifier(scan *s, const char *id, size_t n, const char **pp, int *dir, int depth) {
    if (*dir == DIR_NAME) {
        *dir = (n == 7 && memcmp(id, "include", 7) == 0) || (n == 12 && memcmp(id, "include_next", 12) == 0)
                   ? DIR_OPERAND
               : n == 6 && memcmp(id, "define", 6) == 0 ? DIR_DEFINE
                                                        : DIR_OTHER;
        return;
    }
    /* Only an identifier made of the macros' own characters can be one of them or a piece of one:
     * most identifiers (any lowercase letter, any digit) stop here, which keeps the scan cheap. */
    int macro_chars = 1;
    for (size_t i = 0; i < n && macro_chars; i++) macro_chars = is_macro_char((unsigned char)id[i]);
    for (int m = 0; macro_chars && m < M_N; m++) {
        size_t ml = strlen(macros[m]);
        if (n == ml && memcmp(id, macros[m], n) == 0) {
            on_use(s, m);
        } else if (n < ml) {
            /* Pasted, an identifier is a macro argument (inside parentheses), in a directive (a
             * #define's body), or in an option or the entry name. */
            int ctx = *dir != DIR_NONE || depth > 0 || s->where == W_OPTION || s->where == W_NAME;
            for (size_t i = 0; i + n <= ml; i++)
                if (memcmp(macros[m] + i, id, n) == 0)
                    s->piece[0][m][i][i + n] |= (unsigned char)ctx, s->piece[1][m][i][i + n] = 1;
        }
    }
    if ((n == 13 && memcmp(id, "__has_include", 13) == 0) || (n == 18 && memcmp(id, "__has_include_next", 18) == 0)) {
        const char *q = skip_blank(*pp);
        if (peek(q) == '(') {
            get(&q);
            q = skip_blank(q);
            int c = get(&q);
            if (c == '"' || c == '<') *pp = header_name(s, q, c == '"' ? '"' : '>', 1);
            else s->computed |= 2;
        } else if (*dir == DIR_DEFINE) {
            s->computed |= 2; /* #define HAS __has_include: the operator under another name */
        }
    }
}

/* A comment at p, its '/' read: p past it (a line comment up to its newline), *nl set when a block
 * comment spans a line; NULL when no comment starts here. */
static const char *skip_comment(const char *p, int *nl) {
    *nl = 0;
    if (peek(p) == '/') return skip_line_comment(p);
    if (peek(p) != '*') return NULL;
    get(&p);
    return skip_block_comment(p, nl);
}

/* The rest of an identifier whose first character c was read (*pp after it), spelled into id: at
 * most 31 characters kept (no name or piece is this long); its length. */
static size_t read_identifier(const char **pp, int c, char id[32]) {
    const char *p = *pp;
    size_t n = 0;
    id[n++] = (char)c;
    for (;;) {
        int d = (unsigned char)*p;
        if (d != '\\' && is_id(d)) { /* no splice here: unsplice(p) is p, get(&p) is p + 1 */
            p++;
            if (n + 1 < 32) id[n++] = (char)d;
            else n = 32 - 1;
        } else if (ucn_next(p)) {
            get(&p);
            c = get(&p);
            if (n + 2 < 32) id[n++] = '\\', id[n++] = (char)c;
            else n = 32 - 1;
        } else if (is_id(peek(p))) {
            c = get(&p);
            if (n + 1 < 32) id[n++] = (char)c;
            else n = 32 - 1; /* too long to matter: no name or piece is this long */
        } else {
            break;
        }
    }
    id[n] = '\0';
    *pp = p;
    return n;
}

/* R, u8R, uR, UR, LR: a raw string's prefix */
static int raw_prefix(const char *id, size_t n) {
    return id[n - 1] == 'R' && (n == 1 || (n == 2 && (id[0] == 'u' || id[0] == 'U' || id[0] == 'L')) ||
                                (n == 3 && id[0] == 'u' && id[1] == '8'));
}

/* A parenthesis outside a directive: the depth that tells a macro argument. */
static void on_paren(scan *s, int c, int *depth) {
    if (c == '(') (*depth)++;
    else if (*depth) (*depth)--;
    else s->unbalanced = 1; /* a macro may have opened it: then any identifier may be an argument */
}

static void scan_text(scan *s, const char *text, int where, const char *where_name) {
    s->where = where, s->where_name = where_name;
    const char *p = text, *q;
    int bol = 1, dir = DIR_NONE, depth = 0, nl;
    for (;;) {
        int c = get(&p);
        if (!c) return;
        if (c == '\n') {
            bol = 1, dir = DIR_NONE;
            continue;
        }
        if (is_space(c)) continue;
        if (c == '/' && (q = skip_comment(p, &nl))) {
            p = q;
            if (nl) bol = 1, dir = DIR_NONE; /* conservative: a directive may follow */
            continue;
        }
        int at_bol = bol;
        bol = 0;
        if (dir == DIR_OPERAND) {
            dir = DIR_OTHER;
            if (c == '"' || c == '<') {
                p = header_name(s, p, c == '"' ? '"' : '>', 0);
                continue;
            }
            s->computed |= 1; /* #include MACRO */
        }
        if (c == '#' || (c == '%' && peek(p) == ':')) {
            if (c == '%') get(&p);
            if (at_bol) dir = DIR_NAME;
        } else if (c == '"' || c == '\'') {
            p = skip_quoted(p, c);
        } else if ((c == '(' || c == ')') && dir == DIR_NONE) {
            on_paren(s, c, &depth);
        } else if (is_digit(c) || (c == '.' && is_digit(peek(p)))) {
            p = skip_ppnumber(p);
        } else if (is_id_start(c) || (c == '\\' && (peek(p) == 'u' || peek(p) == 'U'))) {
            char id[32];
            size_t n = read_identifier(&p, c, id);
            if (raw_prefix(id, n) && peek(p) == '"') {
                get(&p);
                p = skip_raw(p);
            } else {
                on_identifier(s, id, n, &p, &dir, depth);
            }
        }
    }
}

static void scan_init(scan *s, const kc_kernel_src *k) {
    memset(s, 0, sizeof *s);
    s->k = k, s->direct = -1;
    /* NVRTC's own headers paste "__" onto a macro argument: count it as always there. */
    for (int m = 0; m < M_N; m++)
        for (size_t i = 0; macros[m][i + 1]; i++)
            if (macros[m][i] == '_' && macros[m][i + 1] == '_') s->piece[0][m][i][i + 2] = s->piece[1][m][i][i + 2] = 1;
}

/*
 * [Note: scanned once per process] Kernels of one spec share their source file and headers (the
 * bundled common.cuh is listed by 26 kernels), and scanning is most of a warm start's
 * instructions.  A text's scan depends on the text, where it is (source, header, and the
 * header's name), and on the kernel only through the header names it includes — listed by the
 * kernel or not, a toolkit kernel or not; and scanning texts one by one into fresh states and
 * merging them (OR of the pieces and flags, the first plain use, the first bad include) is the
 * same as scanning them in turn.  So a text of at least SCAN_MEMO_MIN bytes is scanned once per
 * process for each such context: its outcome is kept under the XXH3-128 of the text and of the
 * context (the kernel's flags and header names, the text's place), with the text's length.
 */
#define SCAN_MEMO_MIN 256
#define SCAN_MEMO_N 32
typedef struct text_scan {
    XXH128_hash_t h, ctx;
    size_t len;
    scan t; /* its outcome: pieces, direct, unbalanced, computed, the first bad include */
} text_scan;
static pthread_mutex_t scan_mu = PTHREAD_MUTEX_INITIALIZER;
static text_scan *scan_memo; /* SCAN_MEMO_N, kept for the process */
static size_t scan_memo_n, scan_memo_next;

/* What a text's scan depends on besides the text. */
static XXH128_hash_t scan_context(const kc_kernel_src *k, int where, const char *where_name) {
    XXH3_state_t *st = XXH3_createState();
    XXH128_hash_t none = {0, 0};
    if (!st) return none;
    XXH3_128bits_reset(st);
    unsigned v[2] = {(unsigned)where, (unsigned)k->flags};
    XXH3_128bits_update(st, v, sizeof v);
    if (where_name) XXH3_128bits_update(st, where_name, strlen(where_name) + 1);
    for (size_t h = 0; h < k->nheaders; h++) {
        const char *n = k->headers[h].name ? k->headers[h].name : "";
        XXH3_128bits_update(st, "\001", 1); /* a listed name, NULL or not */
        XXH3_128bits_update(st, n, strlen(n) + 1);
    }
    XXH128_hash_t r = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return r;
}

static void scan_merge(scan *s, const scan *t) {
    unsigned char *a = &s->piece[0][0][0][0];
    const unsigned char *b = &t->piece[0][0][0][0];
    for (size_t i = 0; i < sizeof s->piece; i++) a[i] |= b[i];
    if (s->direct < 0) s->direct = t->direct;
    s->names |= t->names;
    s->unbalanced |= t->unbalanced;
    s->computed |= t->computed;
    if (!s->bad && t->bad) {
        s->bad = t->bad, s->bad_has = t->bad_has;
        memcpy(s->bad_name, t->bad_name, sizeof s->bad_name);
        memcpy(s->bad_in, t->bad_in, sizeof s->bad_in);
    }
}

static void scan_text_once(scan *s, const char *text, int where, const char *where_name) {
    size_t len = strlen(text);
    if (len < SCAN_MEMO_MIN) {
        scan_text(s, text, where, where_name);
        return;
    }
    XXH128_hash_t h = XXH3_128bits(text, len), ctx = scan_context(s->k, where, where_name);
    int found = 0;
    pthread_mutex_lock(&scan_mu);
    for (size_t i = 0; i < scan_memo_n && !found; i++) {
        const text_scan *m = &scan_memo[i];
        if (m->len == len && XXH128_isEqual(m->h, h) && XXH128_isEqual(m->ctx, ctx)) {
            scan_merge(s, &m->t);
            found = 1;
        }
    }
    pthread_mutex_unlock(&scan_mu);
    if (found) return;
    scan *t = kc_malloc(sizeof *t);
    if (!t) { /* no room to keep it: scanned in place, as always */
        scan_text(s, text, where, where_name);
        return;
    }
    scan_init(t, s->k);
    scan_text(t, text, where, where_name);
    scan_merge(s, t);
    pthread_mutex_lock(&scan_mu);
    if (!scan_memo) scan_memo = kc_calloc(SCAN_MEMO_N, sizeof *scan_memo);
    if (scan_memo) {
        text_scan *m = &scan_memo[scan_memo_n < SCAN_MEMO_N ? scan_memo_n++ : scan_memo_next++ % SCAN_MEMO_N];
        m->h = h, m->ctx = ctx, m->len = len, m->t = *t;
        m->t.k = NULL;
    }
    pthread_mutex_unlock(&scan_mu);
    free(t);
}

static void scan_kernel(scan *s, const kc_kernel_src *k) {
    scan_init(s, k);
    if (k->source) scan_text_once(s, k->source, W_SOURCE, NULL);
    for (size_t h = 0; h < k->nheaders; h++)
        if (k->headers[h].source) scan_text_once(s, k->headers[h].source, W_HEADER, k->headers[h].name);
    for (size_t o = 0; k->options && o < k->noptions; o++)
        if (k->options[o]) scan_text(s, k->options[o], W_OPTION, NULL);
    if (k->name) scan_text(s, k->name, W_NAME, NULL);
}

/* Whether macro m is a concatenation of two or more identifiers that could be pasted. */
static int can_paste(const scan *s, int m) {
    size_t n = strlen(macros[m]);
    unsigned char reach[M_MAX + 1] = {1};
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; reach[i] && j <= n; j++)
            if (s->piece[s->unbalanced][m][i][j]) reach[j] = 1;
    return reach[n];
}

int kc_kernel_cacheable(const kc_kernel_src *k, const char **reason) {
    static const char *const used[W_N * M_TIMED] = {
        "the source uses __DATE__",     "the source uses __TIME__",     "the source uses __TIMESTAMP__",
        "a header uses __DATE__",       "a header uses __TIME__",       "a header uses __TIMESTAMP__",
        "an option uses __DATE__",      "an option uses __TIME__",      "an option uses __TIMESTAMP__",
        "the entry name uses __DATE__", "the entry name uses __TIME__", "the entry name uses __TIMESTAMP__"};
#define PASTED(m) \
    "the source, its headers or options could form " m " by token pasting (identifiers that spell it appear)"
    static const char *const pasted[M_TIMED] = {PASTED("__DATE__"), PASTED("__TIME__"), PASTED("__TIMESTAMP__")};
#undef PASTED
    if (!k) return 1;
    if (k->version < 1 || k->version > KC_KERNEL_SRC_VERSION) { /* when in doubt, not cacheable */
        if (reason)
            *reason = "kc_kernel_src.version is not one this kcache knows (initialise it with KC_KERNEL_SRC_INIT)";
        return 0;
    }
    scan s;
    scan_kernel(&s, k);
    const char *why = NULL;
    if (s.direct >= 0) why = used[s.direct];
    else if (s.bad == 1)
        why = "the source or a header includes a file by its absolute path, whose contents are in no key";
    else if (s.bad == 2)
        why =
            "the source or a header includes a file by a path with '..', which can leave the toolkit's include folder";
    else if (s.computed & 1)
        why =
            "the source or a header includes a file by a computed name (#include MACRO), which kcache cannot know without preprocessing";
    else if (s.computed & 2)
        why =
            "the source or a header tests __has_include with a computed name, which kcache cannot know without preprocessing";
    for (int m = 0; !why && m < M_TIMED; m++)
        if (can_paste(&s, m)) why = pasted[m];
    if (!why) return 1;
    if (reason) *reason = why;
    return 0;
}

/* ---- for nvrtc.c (options.h) ---- */

int kc_kernel_names_main_file(const kc_kernel_src *k) {
    if (!k) return 0;
    scan s;
    scan_kernel(&s, k);
    return s.names || can_paste(&s, M_BASE) || can_paste(&s, M_FNAME);
}

int kc_options_check_includes(const kc_kernel_src *k) {
    if (!k) return KC_OK;
    scan s;
    scan_kernel(&s, k);
    if (!s.bad) return KC_OK;
    return kc_err(
        KC_ECOMPILE,
        "%s: %s %s \"%s\" %s: list the header in the spec's \"headers\" (kc_kernel_src.headers) and include it "
        "by that name",
        k->file && *k->file ? k->file : "kernel.cu", s.bad_in, s.bad_has ? "tests __has_include" : "includes",
        s.bad_name,
        s.bad == 1 ? "by its absolute path, a file on disk whose contents would be in no key"
                   : "by a path with '..', which could leave the toolkit's include folder (the part in the key)");
}

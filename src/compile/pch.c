/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pch.c — NVRTC precompiled headers (PCH) for the compiles of one process.
 *
 * The one idea: a header set (the leading directives of a source), compiled for the same target
 * with the same options, is parsed once per process: a PCH file made in the process's own folder
 * serves its later compiles, byte for byte as a compile without it.  Anything unexpected — a
 * creation that fails, a PCH NVRTC does not use, a compile error — is compiled again the plain
 * way, so a PCH can cost time, never a result.
 *
 * Callers: compile/nvrtc.c (kc_pch_plan_ before, kc_pch_done_ after every NVRTC compile), prewarm.
 * Must not: be part of any key; keep a file outside its folder or past the process; use NVRTC's
 * automatic PCH (--pch), whose folders (__nvrtc_auto_pch_*) it would neither bound nor remove.
 *
 * [Note: precompiled headers] What NVRTC 13.0 does, measured on this project's kernels:
 *  - --create-pch=F compiles AND writes F (140 MB for cuda_bf16.h with cooperative groups, 9 MB
 *    for cuda_fp16.h); the prefix precompiled ends at the first token, or at a #line: a #line
 *    BEFORE the includes disables creation (#20283), so a toolkit kernel (kcache starts its text
 *    with #line 1 "<file>") gets its header prefix first, then #line N+1 "<file>" (every later line
 *    keeps its name and number).  NVRTC does not know #pragma hdrstop.
 *  - cubin and PTX are the same bytes with and without PCH (made or used): 93 combinations of
 *    sm_80/90/100/120, compute_80/90, no option, -lineinfo, -default-device, --use_fast_math, -D,
 *    -std, -maxrregcount, for rmsnorm_bf16.cu, a cuda_fp16.h kernel and one without toolkit
 *    headers; a PCH made from one file serves another with the same directives (comments may
 *    differ), each keeping its own internal names.  Compared with -frandom-seed: without it,
 *    NVRTC's internal-linkage names differ in every compile.  -G for sm_100 differs even between
 *    two plain compiles: where identity cannot be checked, PCH stays off (option_refused).
 *  - a PCH of other options or directives is refused with a warning (#629, #630) and the headers
 *    parsed; a PCH file missing is a compile error.  So a use must show "using precompiled header
 *    file" in the log (its line removed here), or the compile runs again without it.
 *  - cost on a loaded 2-core machine: plain 2.4–6 s, create 4.4–8 s, use 0.9–1.5 s (little to
 *    parse gains nothing: PCH_MIN_HEADERS).  A one-off compile (a runtime's miss) must not pay a
 *    creation and a 140 MB write: a header set's FIRST compile is plain, its second creates, later
 *    ones use.  A burst (kc_pch_burst_: a prewarm) names the compiles it expects (kc_pch_announce_,
 *    run at its first compile: a burst of hits pays nothing; counted by set_of's material, as uses
 *    match): a set expected three times or more creates at its first compile, one expected once or
 *    twice none (the bundled graphs' 9 files of 9–140 MB served 3 uses; made for the 3 sets of two,
 *    0.94× without: their second compile, beside the first, waits for the creation), one not named
 *    is as outside a burst.  A
 *    compile that finds its PCH being made waits for it (the creator has the CPU meanwhile).
 *  - two threads using one PCH, or two, or one creating while one uses: the same bytes, no failure;
 *    NVRTC does that itself, so uses are not serialized here.
 *  - the PCH heap (256 MiB by default; this header set needs 132 MiB) is process-wide: a creation
 *    that exhausts it still compiles and says the size needed; setting the heap frees it and makes
 *    every PCH made before unusable (#20282): it is grown only when no compile runs, every file
 *    retired then.
 * A PCH's key here is exact — its whole material compared, never a hash: the folder of the
 * program's name, every option but the PCH's, every in-memory header (name, contents), the
 * prefix's directives.  Not the name: a header that expands __BASE_FILE__ or __FILE_NAME__ (or
 * the time) keeps its maker's, so a kernel whose texts may (cacheable.c's scan, pasting too) or
 * whose toolkit folders do (pch_off.c) gets no PCH.  Files are counted and bounded
 * (pch_max_size; least recently used retired first, never one in use), in a folder
 * kcache-pch-<uid>-<pid>-XXXXXX (0700) under pch_dir or $TMPDIR, removed at exit (atexit, the library's destructor); a dead process's folder of the same
 * user is removed by the next process that makes one — when its pid is not alive here and its lock,
 * an flock its owner holds for its life (pch_dir.c: PID namespaces sharing /tmp), is free.
 */
#include "pch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/internal.h"
#include "../config/config.h"

#define PCH_RECORDS_MAX 512 /* header sets remembered (those without a file are dropped first) */
/* A kernel without the toolkit's headers gets a PCH only with this much in memory: loading one (7 MB at
 * least) took longer than parsing a 100-byte header (plain 105 ms, use 131 ms; cuda_fp16.h: 351, 172). */
#define PCH_MIN_HEADERS (64 * 1024)

enum { ABSENT, CREATING, READY, FAILED };

typedef struct pch_entry {
    struct pch_entry *next;
    char *material; /* what makes two compiles share a PCH, compared whole */
    size_t mlen;
    unsigned seen;  /* compiles of this header set */
    unsigned want;  /* its compiles a burst announced (kc_pch_expect_), 0: not named */
    unsigned had;   /* its compiles in the burst so far */
    int state;      /* ABSENT, CREATING, READY, FAILED */
    int users;      /* compiles using its file now */
    int waiters;    /* compiles waiting for its creation (decide): never dropped meanwhile */
    int refused;    /* NVRTC did not use its file: retired when unused, never made again */
    int heap;       /* its creation ran out of heap: made again once the heap is grown */
    int attempts;   /* creations tried (a header set whose creations fail twice gets none) */
    uint64_t bytes; /* the file's size, READY */
    uint64_t size;  /* the size of the last file made (kept when it is retired), 0: none made yet */
    int plain_next; /* its creation ended in a compile error: one next compile is plain (2 tries at most) */
    uint64_t tick;  /* last use, for least-recently-used retirement */
    unsigned id;    /* the file: <dir>/<id>.pch */
    char what[96];  /* for the log: a file name and target */
} pch_entry;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int on;      /* the setting, and NVRTC has the functions */
    int first;   /* a header set's first compile makes its PCH (tests: kc_pch_test_set_) */
    int bursts;  /* callers compiling many kernels now (kc_pch_burst_), which may announce them */
    int exiting; /* the process is ending: no folder is made any more */
    pid_t pid;   /* the process the folder belongs to */
    char dir[4096];
    int dir_state; /* 0 not made, 1 made, -1 cannot be made */
    int lock_fd;   /* the folder, open and flock'd while it lives (pch_dir.c), -1: none */
    pch_entry *head;
    size_t nrec, files;
    uint64_t total, max, tick;
    unsigned next_id;
    int inflight;     /* NVRTC compiles running */
    size_t heap_want; /* a creation needed this much heap */
    uint64_t created, used, fallbacks, retired;
    __typeof__(nvrtcGetPCHCreateStatus) *CreateStatus;
    __typeof__(nvrtcGetPCHHeapSizeRequired) *HeapRequired;
    __typeof__(nvrtcSetPCHHeapSize) *SetHeap;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .lock_fd = -1};

/* ---- the folder ---- */

void kc_pch_cleanup_(void) {
    pthread_mutex_lock(&g.mu);
    if (g.dir_state == 1 && g.pid == getpid()) { /* a forked child never removes its parent's */
        kc_pch_remove_dir_(g.dir);
        close(g.lock_fd); /* its lock last: until the folder is gone, no sweep takes it */
        g.lock_fd = -1;
        for (pch_entry *e = g.head; e; e = e->next)
            if (e->state == READY) e->state = ABSENT, e->bytes = 0;
        g.files = 0, g.total = 0, g.dir_state = 0;
    }
    pthread_mutex_unlock(&g.mu);
}

static void pch_exit(void) {
    __atomic_store_n(&g.exiting, 1, __ATOMIC_RELAXED); /* a compile still running makes no new folder */
    kc_pch_cleanup_();
}
__attribute__((destructor)) static void pch_destructor(void) { pch_exit(); }
static void pch_atexit(void) { pch_exit(); }

/* Make the process's folder (under the lock).  0 when there is one. */
static int dir_make(void) {
    if (g.dir_state) return g.dir_state == 1 ? 0 : -1;
    if (__atomic_load_n(&g.exiting, __ATOMIC_RELAXED)) return -1;
    const kc_settings *v = &kc_config_process()->v;
    char parent[PATH_MAX]; /* resolved; else another user could put a PCH of theirs in our place */
    int ok = kc_pch_parent_ok_(v->pch_dir[0] ? v->pch_dir : v->tmpdir[0] ? v->tmpdir : "/tmp", parent);
    if (ok) kc_pch_sweep_(parent);
    int n = snprintf(g.dir, sizeof g.dir, "%s/kcache-pch-%lu-%ld-XXXXXX", parent, (unsigned long)getuid(),
                     (long)getpid());
    if (!ok || n <= 0 || (size_t)n >= sizeof g.dir - 64 || !mkdtemp(g.dir) ||
        (g.lock_fd = kc_pch_dir_lock_(g.dir)) < 0) {
        kc_log(KC_LOG_COMPILE, "pch: no folder under %s (%s): compiles go without precompiled headers", parent,
               strerror(errno));
        g.dir_state = -1;
        return -1;
    }
    static int registered;
    if (!registered++) atexit(pch_atexit);
    g.dir_state = 1, g.pid = getpid();
    kc_log(KC_LOG_COMPILE, "pch: folder %s", g.dir);
    return 0;
}

static void file_path(const pch_entry *e, char *out, size_t cap) { snprintf(out, cap, "%s/%u.pch", g.dir, e->id); }

/* Remove e's file (under the lock; nobody uses it). */
static void retire(pch_entry *e, const char *why) {
    char path[4200];
    file_path(e, path, sizeof path);
    unlink(path);
    if (e->state == READY) g.files--, g.total -= e->bytes, g.retired++;
    kc_log(KC_LOG_COMPILE, "pch: retired %s (%s; %llu bytes) %s", path, e->what, (unsigned long long)e->bytes, why);
    e->state = ABSENT, e->bytes = 0;
}

/* Retire least-recently-used files nobody uses until `room` more bytes fit; 1 when they do. */
static int make_room(uint64_t room, const pch_entry *keep) {
    while (g.total + room > g.max) {
        pch_entry *lru = NULL;
        for (pch_entry *e = g.head; e; e = e->next)
            if (e != keep && e->state == READY && e->users == 0 && (!lru || e->tick < lru->tick)) lru = e;
        if (!lru) return 0;
        retire(lru, "to stay within pch_max_size");
    }
    return 1;
}

/* ---- the header prefix and the material ---- */

static int put(char **b, size_t *n, size_t *cap, const char *s, size_t l) {
    if (*n + l + 1 > *cap) {
        size_t c = (*n + l + 1) * 2;
        char *nb = kc_realloc(*b, c);
        if (!nb) return -1;
        *b = nb, *cap = c;
    }
    memcpy(*b + *n, s, l);
    (*b)[*n + l] = '\0';
    *n += l + 1; /* each piece ends with a NUL: pieces never run together */
    return 0;
}

static int blank(const char *a, const char *b) {
    for (; a < b; a++)
        if (*a != ' ' && *a != '\t' && *a != '\r') return 0;
    return 1;
}

enum { LINE_STOP = -1, LINE_OTHER = 0, LINE_DIRECTIVE = 1 };

/* A directive's kind (depth and incl carried). */
static int directive_kind(const char *q, const char *end, int *depth, int *incl) {
    const char *d = q + 1;
    while (d < end && (*d == ' ' || *d == '\t')) d++;
    size_t n = (size_t)(end - d);
    if (n >= 2 && !strncmp(d, "if", 2)) ++*depth;
    else if (n >= 5 && !strncmp(d, "endif", 5)) --*depth;
    else if (n >= 7 && !strncmp(d, "include", 7)) *incl = 1;
    else if ((n >= 4 && !strncmp(d, "line", 4)) || (n >= 6 && !strncmp(d, "pragma", 6))) return LINE_STOP;
    return *depth < 0 || memmem(q, (size_t)(end - q), "/*", 2) ? LINE_STOP : LINE_DIRECTIVE;
}

/* What the line [p, end) is to the prefix (in_comment, depth and incl carried from line to line). */
static int line_kind(const char *p, const char *end, int *in_comment, int *depth, int *incl) {
    const char *q = p, *last = end;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    while (last > p && last[-1] == '\r') last--;
    if (last > p && last[-1] == '\\') return LINE_STOP; /* spliced with the next */
    if (*in_comment || (q + 1 < end && q[0] == '/' && q[1] == '*')) {
        const char *from = *in_comment ? p : q + 2;
        const char *c = memmem(from, (size_t)(end - from), "*/", 2);
        if (c && !blank(c + 2, end)) return LINE_STOP; /* a comment beside code */
        *in_comment = !c;
        return LINE_OTHER;
    }
    if (q == end || (q + 1 < end && q[0] == '/' && q[1] == '/')) return LINE_OTHER;
    return *q == '#' ? directive_kind(q, end, depth, incl) : LINE_STOP;
}

/* The leading lines of `s` that are blank, comments or directives, up to the last point where every
 * #if is closed: their length, their count in *lines, and their directives (each line as written;
 * comments and blank lines do not matter to NVRTC, measured) appended to the material `m`.  0 when
 * they include nothing, or hold what a PCH may not keep the same (the file's name or line, a
 * counter, the time, a #line, a pragma), or what this scanner does not follow (a line spliced by a
 * backslash, a comment beside code). */
static size_t prefix_of(const char *s, int *lines, char **m, size_t *mlen, size_t *mcap) {
    const char *p = s, *cut = s;
    int n = 0, depth = 0, incl = 0, in_comment = 0;
    size_t at_cut = *mlen;
    *lines = 0;
    while (*p) {
        const char *e = strchr(p, '\n'), *end = e ? e : p + strlen(p);
        int kind = line_kind(p, end, &in_comment, &depth, &incl);
        if (kind == LINE_STOP || !e || (kind == LINE_DIRECTIVE && put(m, mlen, mcap, p, (size_t)(end - p)))) break;
        n++;
        p = e + 1;
        if (depth == 0 && !in_comment) cut = p, *lines = n, at_cut = *mlen;
    }
    *mlen = at_cut; /* directives after the cut are not the prefix's */
    size_t len = (size_t)(cut - s);
    static const char *const never[] = {"__FILE__", "__LINE__", "__COUNTER__",  "__BASE_FILE__",
                                        "__TIME__", "__DATE__", "__TIMESTAMP__"};
    for (size_t i = 0; i < KC_ARRAY_LEN(never); i++)
        if (memmem(s, len, never[i], strlen(never[i]))) return 0;
    return len && incl ? len : 0;
}

/* The material two compiles must share to share a PCH (the [Note]), with the prefix's length and
 * lines; NULL when there is no prefix to precompile, or no memory. */
static char *material(const kc_pch_program *p, size_t *plen, int *lines, size_t *mlen) {
    char *b = NULL;
    size_t n = 0, cap = 0;
    const char *slash = strrchr(p->program, '/');
    char num[32];
    int bad = put(&b, &n, &cap, p->program, slash ? (size_t)(slash - p->program) : 0);
    for (size_t i = 0; !bad && i < p->argc; i++) bad = put(&b, &n, &cap, p->argv[i], strlen(p->argv[i]));
    for (size_t i = 0; !bad && i < p->nhdr; i++) {
        size_t hl = strlen(p->hsrcs[i]);
        snprintf(num, sizeof num, "%zu", hl);
        bad = put(&b, &n, &cap, p->hnames[i], strlen(p->hnames[i])) || put(&b, &n, &cap, num, strlen(num)) ||
              put(&b, &n, &cap, p->hsrcs[i], hl);
    }
    bad = bad || put(&b, &n, &cap, "", 0); /* then the directives */
    if (bad || !(*plen = prefix_of(p->source, lines, &b, &n, &cap))) {
        free(b);
        return NULL;
    }
    *mlen = n;
    return b;
}

/* ---- the records ---- */

/* A forked child starts afresh: its parent's folder and files are its parent's. */
static void atfork_prepare(void) { pthread_mutex_lock(&g.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g.mu); }
static void atfork_child(void) {
    g.head = NULL; /* the parent's records: left, not freed (another thread may have been using one) */
    g.nrec = g.files = 0, g.total = 0, g.inflight = 0, g.dir_state = 0, g.dir[0] = '\0';
    if (g.lock_fd >= 0) close(g.lock_fd); /* the parent's lock stays the parent's */
    g.lock_fd = -1;
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_unlock(&g.mu);
}
static void atfork_register(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

void kc_pch_load_(void *lib) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, atfork_register);
    const kc_settings *v = &kc_config_process()->v;
    pthread_mutex_lock(&g.mu);
    *(void **)&g.CreateStatus = dlsym(lib, "nvrtcGetPCHCreateStatus");
    *(void **)&g.HeapRequired = dlsym(lib, "nvrtcGetPCHHeapSizeRequired");
    *(void **)&g.SetHeap = dlsym(lib, "nvrtcSetPCHHeapSize");
    g.max = v->pch_max_size;
    g.on = v->pch && g.CreateStatus && g.HeapRequired && g.SetHeap;
    pthread_mutex_unlock(&g.mu);
    kc_log(KC_LOG_COMPILE, "pch: %s", g.on ? "on" : v->pch ? "this NVRTC has none (12.8 and later have)" : "off");
}

/* Drop the oldest record with no file and no user, one a burst expects no uses of first (under the lock). */
static void drop_one(void) {
    pch_entry **drop = NULL;
    for (pch_entry **q = &g.head; *q; q = &(*q)->next)
        if ((*q)->state != READY && (*q)->state != CREATING && (*q)->users == 0 && (*q)->waiters == 0 &&
            (!drop || (*drop)->want > 0 || (*q)->want == 0))
            drop = q;
    pch_entry *d = drop ? *drop : NULL;
    if (d) *drop = d->next, free(d->material), free(d), g.nrec--;
}

/* The record of `m` (under the lock; m is taken), made when new; NULL when out of memory. */
static pch_entry *record(char *m, size_t mlen, const char *what) {
    pch_entry **pp = &g.head;
    for (pch_entry *e = g.head; e; pp = &e->next, e = e->next)
        if (e->mlen == mlen && memcmp(e->material, m, mlen) == 0) {
            free(m);
            *pp = e->next, e->next = g.head, g.head = e; /* most recent first */
            return e;
        }
    if (g.nrec >= PCH_RECORDS_MAX) drop_one();
    pch_entry *e = kc_calloc(1, sizeof *e);
    if (!e) {
        free(m);
        return NULL;
    }
    e->material = m, e->mlen = mlen;
    snprintf(e->what, sizeof e->what, "%s", what);
    e->next = g.head, g.head = e;
    g.nrec++;
    return e;
}

/* The heap a creation asked for, set when no compile runs: setting it frees it, so every file made
 * before is retired (under the lock). */
static void heap_grow(void) {
    if (!g.heap_want || g.inflight) return;
    nvrtcResult r = g.SetHeap(g.heap_want);
    kc_log(KC_LOG_COMPILE, "pch: heap set to %zu bytes (%s)", g.heap_want, r == NVRTC_SUCCESS ? "done" : "refused");
    g.heap_want = 0;
    for (pch_entry *e = g.head; e; e = e->next) {
        if (e->state == READY) retire(e, "(the heap was set anew)");
        if (e->heap && e->state == FAILED) e->state = ABSENT, e->heap = 0, e->attempts = 0;
    }
}

/* Whether e's compile makes its PCH now (the [Note]): a set a burst announced thrice or more while one
 * more is expected (or more came than announced), any other at its second compile. */
static int wants_file(const pch_entry *e) {
    if (g.first) return 1;
    if (g.bursts > 0 && e->want > 0) return e->had > e->want || (e->want >= 3 && e->had != e->want);
    return e->seen >= 2;
}

/* The mode for e (under the lock): use its file, make it, or neither; may wait for its creator. */
static int decide(pch_entry *e, const kc_pch_program *p) {
    while (e->state == CREATING) { /* a creation always ends */
        e->waiters++;              /* drop_one leaves e meanwhile */
        pthread_cond_wait(&g.cv, &g.mu);
        e->waiters--;
    }
    e->tick = ++g.tick;
    if (e->state == READY && !e->refused) {
        e->users++;
        return KC_PCH_USE;
    }
    if (e->state != ABSENT || !wants_file(e) || e->attempts >= 2 || g.max == 0 || dir_make() != 0) return KC_PCH_NONE;
    if (e->plain_next) { /* the error may be the headers': not made again at once */
        e->plain_next = 0;
        return KC_PCH_NONE;
    }
    uint64_t expect = e->size; /* room for its last file, or one as large as the largest that fit */
    for (pch_entry *x = g.head; !e->size && x; x = x->next)
        if (x->size > expect && x->size <= g.max) expect = x->size;
    if (expect > g.max || !kc_pch_tree_clean_(p->argv, p->argc) || !make_room(expect, e)) return KC_PCH_NONE;
    e->state = CREATING;
    e->attempts++;
    e->id = ++g.next_id;
    e->users++;
    return KC_PCH_CREATE;
}

/* The text with the header prefix first and a #line after it (the [Note]). */
static char *text_of(const kc_pch_program *p, size_t plen, int lines) {
    const char *name = p->line_name ? p->line_name : p->program;
    size_t sl = strlen(p->source), nl = strlen(name);
    char *t = kc_malloc(sl + nl + 64);
    if (!t) return NULL;
    memcpy(t, p->source, plen);
    int n = snprintf(t + plen, nl + 64, "#line %d \"%s\"\n", lines + 1, name);
    memcpy(t + plen + (size_t)n, p->source + plen, sl - plen + 1);
    return t;
}

/* The header set of p, as kc_pch_plan_ and kc_pch_expect_ match it: its material (the [Note]), the
 * prefix's length and lines, and what the log calls it; NULL when p gets no PCH (or no memory). */
static char *set_of(const kc_pch_program *p, size_t *plen, int *lines, size_t *mlen, char what[96]) {
    const char *name = p->line_name ? p->line_name : p->program;
    if (p->off || !p->source || strpbrk(name, "\"\\\n\r")) return NULL;
    for (size_t i = 0; i < p->argc; i++)
        if (kc_pch_option_refused_(p->argv[i])) return NULL;
    size_t hbytes = 0;
    for (size_t i = 0; i < p->nhdr; i++) hbytes += strlen(p->hsrcs[i]);
    if (!p->line_name && hbytes < PCH_MIN_HEADERS) return NULL; /* little to parse: a PCH would cost more */
    char *m = material(p, plen, lines, mlen);
    const char *arch = "";
    for (size_t i = 0; m && i < p->argc; i++)
        if (!strncmp(p->argv[i], "-arch=", 6)) arch = p->argv[i] + 6;
    snprintf(what, 96, "%.60s for %.20s", name, arch);
    return m;
}

/* The header set of p, its text and its mode into plan (the lock not held). */
static void plan_pch(const kc_pch_program *p, kc_pch_plan *plan) {
    int lines = 0;
    size_t plen = 0, mlen = 0;
    char what[96];
    char *m = set_of(p, &plen, &lines, &mlen, what);
    if (!m) return;
    char *text = text_of(p, plen, lines);
    if (!text) {
        free(m);
        return;
    }
    pthread_mutex_lock(&g.mu);
    pch_entry *e = record(m, mlen, what);
    if (e) e->seen++, e->had += g.bursts > 0;
    if (e && (plan->mode = decide(e, p)) != KC_PCH_NONE) {
        plan->entry = e;
        char path[4200];
        file_path(e, path, sizeof path);
        snprintf(plan->opt, sizeof plan->opt, "%s=%s", plan->mode == KC_PCH_CREATE ? "--create-pch" : "--use-pch",
                 path);
    }
    pthread_mutex_unlock(&g.mu);
    if (plan->mode == KC_PCH_NONE) {
        free(text);
        return;
    }
    plan->text = text;
    plan->opts[0] = plan->opt, plan->opts[1] = "--pch-messages=true", plan->opts[2] = "--pch-verbose=false";
    plan->opts[3] = "-diag-suppress=20283"; /* "PCH creation disabled because #line directive encountered" */
    plan->nopts = 4;
}

void kc_pch_plan_(const kc_pch_program *p, kc_pch_plan *plan) {
    memset(plan, 0, sizeof *plan);
    plan->t0 = kc_mono_ns();
    pthread_mutex_lock(&g.mu);
    heap_grow();
    g.inflight++;
    int on = g.on;
    pthread_mutex_unlock(&g.mu);
    if (on && p->source) kc_pch_announce_run_(); /* a burst's counts in before its first compile decides */
    if (on && p->source) plan_pch(p, plan);      /* no source: a compile without, counted running */
}

void kc_pch_expect_(const kc_pch_program *p) {
    int lines = 0;
    size_t plen = 0, mlen = 0;
    char what[96];
    char *m = set_of(p, &plen, &lines, &mlen, what);
    if (!m) return;
    pthread_mutex_lock(&g.mu);
    pch_entry *e = g.on && g.bursts > 0 ? record(m, mlen, what) : (free(m), NULL); /* record takes m */
    if (e) e->want++;
    pthread_mutex_unlock(&g.mu);
}

/* Remove NVRTC's line `"<program>": <verb> precompiled header file "<path>"` from log; 1 when it was there. */
static int strip_message(char *log, const char *verb, const char *path) {
    char pat[4300];
    snprintf(pat, sizeof pat, ": %s precompiled header file \"%s\"\n", verb, path);
    for (char *at = log ? strstr(log, pat) : NULL; at; at = strstr(at + 1, pat)) {
        char *bol = at;
        while (bol > log && bol[-1] != '\n') bol--;
        if (*bol != '"' || at == bol || at[-1] != '"') continue;
        char *eol = at + strlen(pat);
        memmove(bol, eol, strlen(eol) + 1);
        return 1;
    }
    return 0;
}

/* The creation of e is over and its file written (under the lock): keep it within the bound, or not at all. */
static void created(pch_entry *e, const char *path, uint64_t ms) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        e->state = FAILED;
        return;
    }
    e->bytes = e->size = (uint64_t)st.st_size;
    e->state = READY;
    g.files++, g.total += e->bytes, g.created++;
    kc_log(KC_LOG_COMPILE, "pch: created %s (%s; %llu bytes) in %llu ms", path, e->what, (unsigned long long)e->bytes,
           (unsigned long long)ms);
    if (!make_room(0, e)) retire(e, "(larger than pch_max_size)");
}

/* A creation's end (under the lock); 1 when its compile stands. */
static int create_done(pch_entry *e, const kc_pch_plan *plan, int ok, void *prog, char *log) {
    char path[4200];
    file_path(e, path, sizeof path);
    nvrtcResult st = prog ? g.CreateStatus((nvrtcProgram)prog) : NVRTC_ERROR_PCH_CREATE;
    int said = strip_message(log, "creating", path);
    size_t want = 0;
    if (st == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED && g.HeapRequired((nvrtcProgram)prog, &want) == NVRTC_SUCCESS &&
        want > 0 && want <= ((size_t)1 << 34)) {
        g.heap_want = want > g.heap_want ? want : g.heap_want;
        e->state = FAILED, e->heap = 1; /* made again once the heap is grown (heap_grow) */
        kc_log(KC_LOG_COMPILE, "pch: %s needs a heap of %zu bytes", e->what, want);
    } else if (ok && st == NVRTC_SUCCESS && said) {
        created(e, path, (kc_mono_ns() - plan->t0) / 1000000);
    } else {
        e->state = ok ? FAILED : ABSENT; /* a compile error: the headers' or the kernel's (tried twice at most) */
        e->plain_next = !ok;
        kc_log(KC_LOG_COMPILE, "pch: not created for %s (%s)", e->what, ok ? "NVRTC refused" : "a compile error");
    }
    if (e->state != READY) unlink(path);
    return ok && said && st == NVRTC_SUCCESS;
}

int kc_pch_done_(kc_pch_plan *plan, int ok, void *prog, char *log) {
    pch_entry *e = plan->entry;
    int stands = 1;
    pthread_mutex_lock(&g.mu);
    g.inflight--;
    if (e && plan->mode == KC_PCH_CREATE) {
        stands = create_done(e, plan, ok, prog, log);
    } else if (e && plan->mode == KC_PCH_USE) {
        char path[4200];
        file_path(e, path, sizeof path);
        stands = ok && strip_message(log, "using", path);
        if (stands) g.used++;
        if (ok && !stands) e->refused = 1; /* NVRTC did not use it: never again in this process */
        kc_log(KC_LOG_COMPILE, "pch: %s %s for %s", ok && !stands ? "NVRTC refused" : "used", path, e->what);
    }
    if (e && --e->users == 0 && e->refused && e->state == READY) {
        retire(e, "(NVRTC refused it)");
        e->state = FAILED;
    }
    if (!stands) g.fallbacks++;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    free(plan->text);
    plan->text = NULL;
    return stands;
}

void kc_pch_stats_(kc_pch_stats *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g.mu);
    out->on = g.on;
    out->files = g.files, out->bytes = g.total;
    out->created = g.created, out->used = g.used, out->fallbacks = g.fallbacks, out->retired = g.retired;
    if (g.dir_state == 1) snprintf(out->dir, sizeof out->dir, "%s", g.dir);
    pthread_mutex_unlock(&g.mu);
}

int kc_pch_test_set_(int on, int first) {
    pthread_mutex_lock(&g.mu);
    int was = g.on;
    if (on >= 0) g.on = on && g.CreateStatus && kc_config_process()->v.pch;
    g.first = first;
    pthread_mutex_unlock(&g.mu);
    return was;
}

void kc_pch_burst_(int begin) {
    pthread_mutex_lock(&g.mu);
    g.bursts += begin ? 1 : (g.bursts > 0 ? -1 : 0);
    for (pch_entry *e = g.bursts ? NULL : g.head; e; e = e->next) e->want = e->had = 0;
    pthread_mutex_unlock(&g.mu);
}

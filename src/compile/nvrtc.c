/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvrtc.c — NVRTC through dlopen: load the library and compile one program for one target
 * (options and cacheability are options.c's; finding and identifying the library, without
 * loading it, is toolchain.c's).
 *
 * The one idea: NVRTC is a run-time dependency loaded once (pthread_once), only when a
 * compile needs it — exactly the file toolchain.c identified, so the compiler is the
 * toolchain the key names — and called only through a table of function pointers checked
 * by KC_NVRTC_CHECK, which records the call, file and line in the last error instead of
 * aborting (ggml's CUDA_CHECK, made non-fatal).
 * The toolkit's nvrtc.h gives the types at build time; no CUDA library is linked.
 *
 * Must not: touch the cache (the graph part decides what is stored), or let NVRTC's own
 * cache turn a miss into a hidden hit (-no-cache on NVRTC >= 12.9).
 *
 * Callers: compile/units.c (kc_compile_names_for_: a target parsed already), the graph part (cacheability, option
 * normalisation), and the public compile.h API.  Nothing on a hit calls it.
 */
#include "kcache/compile.h"

#include <dlfcn.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "options.h"
#include "toolkit.h"
#include "nvrtc.h"
#include "pch.h"
#include "targets.h"
#include "units.h" /* kc_compile_names_for_ */
#include "kcache/target.h"
#include "../config/config.h"

static struct {
    void *lib;
    int major, minor;
    int no_cache;        /* NVRTC >= 12.9: pass -no-cache */
    int seed;            /* NVRTC >= 12.9 knows -frandom-seed ([Note: the same bytes]) */
    char toolchain[400]; /* "nvrtc 13.0 (build-id:…, /path/libnvrtc.so.13)": for people */
    char why[1200];      /* why it could not be loaded */
    __typeof__(nvrtcVersion) *Version;
    __typeof__(nvrtcGetErrorString) *GetErrorString;
    __typeof__(nvrtcCreateProgram) *CreateProgram;
    __typeof__(nvrtcDestroyProgram) *DestroyProgram;
    __typeof__(nvrtcCompileProgram) *CompileProgram;
    __typeof__(nvrtcGetPTXSize) *GetPTXSize;
    __typeof__(nvrtcGetPTX) *GetPTX;
    __typeof__(nvrtcGetCUBINSize) *GetCUBINSize;
    __typeof__(nvrtcGetCUBIN) *GetCUBIN;
    __typeof__(nvrtcGetProgramLogSize) *GetProgramLogSize;
    __typeof__(nvrtcGetProgramLog) *GetProgramLog;
    __typeof__(nvrtcAddNameExpression) *AddNameExpression;
    __typeof__(nvrtcGetLoweredName) *GetLoweredName;
    int archs[KC_NVRTC_ARCHS_MAX]; /* nvrtcGetSupportedArchs, as NVRTC gives them */
    int narchs;                    /* 0: this NVRTC does not say (before 11.2) */
} nv;
static int nv_done; /* nv_load has run (atomic): kc_nvrtc_archs_ may read nv without loading */
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

#define KC_NVRTC_CHECK(call)                                                                                    \
    do {                                                                                                        \
        nvrtcResult r_ = (call);                                                                                \
        if (r_ != NVRTC_SUCCESS) {                                                                              \
            rc = kc_err(r_ == NVRTC_ERROR_COMPILATION ? KC_ECOMPILE : KC_ERROR, "%s failed: %s (%s:%d)", #call, \
                        nv.GetErrorString(r_), __FILE__, __LINE__);                                             \
            goto done;                                                                                          \
        }                                                                                                       \
    } while (0)

static void *try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(nv.why + strlen(nv.why), sizeof nv.why - strlen(nv.why), "%s%s", nv.why[0] ? "; " : "", dlerror());
    return h;
}

/* The targets this NVRTC compiles ([Note: target check] in kcache/target.h); none when it cannot
 * say (before NVRTC 11.2: the symbols are missing) or says something out of range. */
static void supported_load(void) {
    __typeof__(nvrtcGetNumSupportedArchs) *num;
    __typeof__(nvrtcGetSupportedArchs) *get;
    *(void **)&num = dlsym(nv.lib, "nvrtcGetNumSupportedArchs");
    *(void **)&get = dlsym(nv.lib, "nvrtcGetSupportedArchs");
    int n = 0;
    if (!num || !get || num(&n) != NVRTC_SUCCESS || n <= 0 || n > KC_NVRTC_ARCHS_MAX || get(nv.archs) != NVRTC_SUCCESS)
        n = 0;
    for (int i = 0; i < n; i++)
        if (nv.archs[i] < 30 || nv.archs[i] > 999) n = 0; /* not a compute capability: trust none */
    nv.narchs = n;
}

/* Load exactly the file toolchain.c identified ([Note: finding NVRTC]), so that the compiler
 * is the toolchain the key names; refuse it if it changed between identifying and loading. */
static void nv_load(void) {
    static kc_toolchain tc; /* 4 KB: not on the caller's stack */
    if (kc_toolchain_local(&tc) != KC_OK) {
        snprintf(nv.why, sizeof nv.why, "%s", kc_error_last()->message);
        return;
    }
    nv.lib = try_open(tc.path);
    if (!nv.lib) return;
    struct stat st;
    if (stat(tc.path, &st) != 0 || (unsigned long long)st.st_ino != tc.ino || (unsigned long long)st.st_dev != tc.dev ||
        (unsigned long long)st.st_size != tc.size ||
        (long long)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec != tc.ctime_ns) {
        snprintf(nv.why, sizeof nv.why, "'%s' changed after it was identified (replaced while kcache ran?)", tc.path);
        dlclose(nv.lib);
        nv.lib = NULL;
        return;
    }
#define SYM(field, name)                                                    \
    if (!(*(void **)&nv.field = dlsym(nv.lib, name))) {                     \
        snprintf(nv.why, sizeof nv.why, "NVRTC lacks the symbol %s", name); \
        dlclose(nv.lib);                                                    \
        nv.lib = NULL;                                                      \
        return;                                                             \
    }
    SYM(Version, "nvrtcVersion");
    SYM(GetErrorString, "nvrtcGetErrorString");
    SYM(CreateProgram, "nvrtcCreateProgram");
    SYM(DestroyProgram, "nvrtcDestroyProgram");
    SYM(CompileProgram, "nvrtcCompileProgram");
    SYM(GetPTXSize, "nvrtcGetPTXSize");
    SYM(GetPTX, "nvrtcGetPTX");
    SYM(GetCUBINSize, "nvrtcGetCUBINSize");
    SYM(GetCUBIN, "nvrtcGetCUBIN");
    SYM(GetProgramLogSize, "nvrtcGetProgramLogSize");
    SYM(GetProgramLog, "nvrtcGetProgramLog");
    SYM(AddNameExpression, "nvrtcAddNameExpression");
    SYM(GetLoweredName, "nvrtcGetLoweredName");
#undef SYM
    nv.why[0] = '\0';
    nv.Version(&nv.major, &nv.minor);
    nv.no_cache = nv.major > 12 || (nv.major == 12 && nv.minor >= 9);
    nv.seed = nv.no_cache; /* 12.8 and older refuse -frandom-seed: "unrecognized option" */
    supported_load();
    kc_pch_load_(nv.lib);
    /* KCACHE_NVRTC_OWN_CACHE=1 leaves NVRTC's own cache on: only for measuring it (kcache-bench).
     * Parsed strictly; a bad value keeps the safe default (NVRTC's cache off) and says so. */
    bool own = false;
    own = kc_config_process()->v.nvrtc_own_cache; /* a bad value: said by config/, and off */
    if (own) nv.no_cache = 0;
    /* For people (logs, the benchmark): the version NVRTC reports, its identity and its file.
     * The key holds the identity alone (toolchain.c). */
    snprintf(nv.toolchain, sizeof nv.toolchain, "nvrtc %d.%d (%s, %.*s)", nv.major, nv.minor, tc.id,
             (int)(sizeof nv.toolchain / 2), tc.path);
    kc_log(KC_LOG_COMPILE, "loaded %s", nv.toolchain);
}

static void nv_load_once(void) {
    nv_load();
    __atomic_store_n(&nv_done, 1, __ATOMIC_RELEASE);
}

int kc_nvrtc_archs_(int load, int *cc, size_t cap, size_t *n, int *major, int *minor) {
    *n = 0;
    if (load) pthread_once(&nv_once, nv_load_once);
    if (!__atomic_load_n(&nv_done, __ATOMIC_ACQUIRE) || !nv.lib)
        return load ? kc_nvrtc_available() : kc_err(KC_ENONVRTC, "NVRTC is not loaded");
    if (nv.narchs == 0) return kc_err(KC_ENONVRTC, "this NVRTC (%d.%d) does not list its targets", nv.major, nv.minor);
    for (int i = 0; i < nv.narchs && (size_t)i < cap; i++) cc[(*n)++] = nv.archs[i];
    *major = nv.major, *minor = nv.minor;
    return KC_OK;
}

int kc_nvrtc_available(void) {
    pthread_once(&nv_once, nv_load_once);
    if (nv.lib) return KC_OK;
    return kc_err(KC_ENONVRTC, "compiling needs NVRTC, which could not be loaded (set KCACHE_NVRTC to its library): %s",
                  nv.why);
}

const char *kc_nvrtc_toolchain(void) {
    pthread_once(&nv_once, nv_load_once);
    return nv.lib ? nv.toolchain : "";
}

/* ---- compile ---- */

void kc_compiled_free(kc_compiled *c) {
    if (!c) return;
    free(c->image);
    for (size_t i = 0; c->lowered_names && i < c->nnames; i++) free(c->lowered_names[i]);
    free(c->lowered_names);
    free(c->log);
    free(c);
}

int kc_compile_kernel(const kc_kernel_src *k, const char *target, kc_compiled **out) {
    if (out) *out = NULL;
    if (!k || !k->name) return kc_err(KC_EINVAL, "kc_compile_kernel: NULL argument");
    return kc_compile_names(k, &k->name, 1, target, out);
}

/* The checks every compile makes before the target's: the struct's version, the names, NVRTC. */
static int compile_precheck(const kc_kernel_src *k, const char *const *names, size_t nnames) {
    int vrc = kc_api_version("kc_compile_names", "kc_kernel_src", "KC_KERNEL_SRC_INIT", k->version,
                             KC_KERNEL_SRC_VERSION);
    if (!vrc) vrc = kc_kernel_src_arrays_ok_("kc_compile_names", k);
    if (vrc) return vrc;
    for (size_t i = 0; i < nnames; i++)
        if (!names[i] || !*names[i]) return kc_err(KC_EINVAL, "kc_compile_names: name %zu is empty", i);
    return kc_nvrtc_available();
}

/* One NVRTC program's inputs, made from a kernel source and a target: its options (argv), its
 * headers (the kernel's, then the toolkit's shims), and its text (the source, behind the toolkit's
 * prefix when it reads the toolkit's headers). */
typedef struct nvrtc_call {
    kc_toolkit_inputs *tk; /* NULL unless the kernel reads the toolkit's headers */
    const char **argv, **hnames, **hsrcs;
    size_t argc, nhdr;
    char *source; /* owned: the text when prefixed */
    const char *file, *program, *text;
    char arch[40], tname[16];
} nvrtc_call;

static void call_free(nvrtc_call *p) {
    free(p->argv);
    free(p->hnames);
    free(p->hsrcs);
    free(p->source);
    free(p->tk);
}

/* The options are checked (their key form is not used here: NVRTC gets them as written, in order,
 * repeats kept), and so are the files the source would make NVRTC read; a kernel with the toolkit's
 * headers reaches its include folder ([Note: toolkit includes]). */
static int call_inputs(nvrtc_call *p, const kc_kernel_src *k) {
    char *opts = NULL;
    int rc = kc_options_normalize(k, &opts);
    free(opts);
    if (!rc) rc = kc_options_check_includes(k);
    if (rc || !(k->flags & KC_KERNEL_TOOLKIT_HEADERS)) return rc;
    if (!(p->tk = kc_malloc(sizeof *p->tk))) return kc_err(KC_ENOMEM, "compile: out of memory");
    return kc_toolkit_inputs_for(k->file, p->tk);
}

/*
 * [Note: the same bytes] NVRTC 13.0 names internal-linkage entities (those of the toolkit's
 * headers among them) with a value that changes in every compile, and what looks like the process
 * id: two compiles of one toolkit kernel give images of one size and different bytes, in one process
 * or in two.  The machine code is the same, but the same key would hold other bytes on every host,
 * and a PCH's image could not be checked against a plain one.  -frandom-seed fixes the value:
 * kcache passes one of its own unless the kernel's options give theirs (which are in its key);
 * NVRTC 12.8 and older do not know the option (their images keep NVRTC's names).  It is not in the key: an entry compiled without it is the same program under other internal names.
 */
static int has_seed(const kc_kernel_src *k) {
    for (size_t i = 0; i < k->noptions; i++) {
        const char *o = k->options[i];
        while (o && (*o == ' ' || *o == '\t' || *o == '\r' || *o == '\n')) o++;
        if (o && (!strncmp(o, "-frandom-seed", 13) || !strncmp(o, "--frandom-seed", 14))) return 1;
    }
    return 0;
}

/* The program's options, headers and text. */
static int call_prepare(nvrtc_call *p, const kc_kernel_src *k, const kc_target *t) {
    const kc_toolkit_inputs *tk = p->tk;
    p->nhdr = k->nheaders + (tk ? tk->nshims : 0);
    p->argv = kc_calloc(k->noptions + 7 + KC_ARRAY_LEN(((kc_pch_plan *)0)->opts), sizeof *p->argv);
    p->hnames = kc_calloc(p->nhdr + 1, sizeof *p->hnames);
    p->hsrcs = kc_calloc(p->nhdr + 1, sizeof *p->hsrcs);
    if (!p->argv || !p->hnames || !p->hsrcs) return kc_err(KC_ENOMEM, "compile: out of memory");
    for (size_t i = 0; i < k->noptions; i++) p->argv[p->argc++] = k->options[i]; /* as written */
    kc_target_name(t, p->tname);
    snprintf(p->arch, sizeof p->arch, "-arch=%s", p->tname);
    p->argv[p->argc++] = p->arch;
    if (nv.seed && !has_seed(k)) p->argv[p->argc++] = "-frandom-seed=kcache"; /* [Note: the same bytes] */
    if (nv.no_cache) p->argv[p->argc++] = "-no-cache";
    /* NVRTC searches no folder whose files are not in the key: not the source's own (for a
     * relative name, the working directory), and none but the toolkit's when asked for. */
    if (!tk) p->argv[p->argc++] = "-no-source-include";
    for (size_t i = 0; tk && i < tk->ninclude; i++) p->argv[p->argc++] = tk->include[i];
    for (size_t i = 0; i < k->nheaders; i++) {
        p->hnames[i] = k->headers[i].name;
        p->hsrcs[i] = k->headers[i].source;
        if (!p->hnames[i] || !p->hsrcs[i]) return kc_err(KC_EINVAL, "header %zu has no name or source", i);
    }
    for (size_t i = 0; tk && i < tk->nshims; i++) { /* after the kernel's own: a listed header wins */
        p->hnames[k->nheaders + i] = tk->shims[i].name;
        p->hsrcs[k->nheaders + i] = tk->shims[i].source;
    }
    p->file = k->file && *k->file ? k->file : "kernel.cu";
    p->program = p->file, p->text = k->source;
    if (!tk) return KC_OK;
    size_t pl = strlen(tk->prefix), sl = strlen(k->source);
    if (!(p->source = kc_malloc(pl + sl + 1))) return kc_err(KC_ENOMEM, "compile: out of memory");
    memcpy(p->source, tk->prefix, pl);
    memcpy(p->source + pl, k->source, sl + 1);
    p->program = tk->program, p->text = p->source;
    return KC_OK;
}

/* NVRTC's refusal of a program, said: a header kcache does not give it named, with how to give it. */
static int compile_failed(const nvrtc_call *p, nvrtcResult cr, const char *name, const char *log) {
    char hdr[256], from[300]; /* a header NVRTC could not find: say how to provide it */
    if (cr == NVRTC_ERROR_COMPILATION && kc_options_missing_header(log, hdr, sizeof hdr, from, sizeof from))
        return kc_err(KC_ECOMPILE,
                      "NVRTC could not compile '%s' (%s) for %s: %s includes \"%s\", a header kcache does not give "
                      "NVRTC (NVRTC reads no file whose contents are not in the key): list it in the spec's "
                      "\"headers\" (kc_kernel_src.headers)%s\n%s",
                      name, p->file, p->tname, from[0] ? from : p->file, hdr,
                      p->tk ? "; it is not one of the CUDA toolkit's headers either"
                            : ", or, if it is one of the CUDA toolkit's headers, set \"toolkit_headers\": true "
                              "(KC_KERNEL_TOOLKIT_HEADERS)",
                      log);
    return kc_err(cr == NVRTC_ERROR_COMPILATION ? KC_ECOMPILE : KC_ERROR,
                  "NVRTC could not compile '%s' (%s) for %s: %s\n%s", name, p->file, p->tname, nv.GetErrorString(cr),
                  log);
}

/* Compile the program (its log into c->log, its time into c->seconds), with `plan`'s options; *stands
 * 0 when the PCH was not used as planned (kc_pch_done_: compile again without). */
static int call_compile(nvrtc_call *p, nvrtcProgram prog, const char *name, kc_pch_plan *plan, kc_compiled *c,
                        int *stands) {
    for (size_t i = 0; i < plan->nopts; i++) p->argv[p->argc + i] = plan->opts[i];
    uint64_t t0 = kc_mono_ns();
    nvrtcResult cr = nv.CompileProgram(prog, (int)(p->argc + plan->nopts), p->argv);
    c->seconds = (double)(kc_mono_ns() - t0) / 1e9;
    size_t logn = 0;
    if (nv.GetProgramLogSize(prog, &logn) != NVRTC_SUCCESS) logn = 0;
    c->log = kc_malloc(logn + 1);
    if (c->log) {
        c->log[0] = '\0';
        if (logn > 1 && nv.GetProgramLog(prog, c->log) != NVRTC_SUCCESS) c->log[0] = '\0';
        c->log[logn] = '\0';
    }
    /* What the PCH stands for, for the toolkit's direct mode ([Note: a PCH's reads] in toolkit.h). */
    const char *pch = plan->nopts ? strchr(plan->opt, '=') + 1 : NULL;
    if (plan->mode == KC_PCH_CREATE && cr == NVRTC_SUCCESS) kc_toolkit_pch_made_(pch);
    *stands = kc_pch_done_(plan, cr == NVRTC_SUCCESS, prog, c->log);
    if (plan->mode == KC_PCH_USE && *stands) kc_toolkit_pch_used_(pch);
    if (!c->log) return kc_err(KC_ENOMEM, "compile: out of memory");
    if (!*stands) return KC_OK;
    return cr == NVRTC_SUCCESS ? KC_OK : compile_failed(p, cr, name, c->log);
}

/* A compiled program's lowered names and image (PTX or cubin) into c. */
static int call_outputs(nvrtcProgram prog, const char *const *names, size_t nnames, int ptx, kc_compiled *c) {
    int rc = KC_OK;
    for (size_t i = 0; i < nnames; i++) {
        const char *lowered = NULL;
        KC_NVRTC_CHECK(nv.GetLoweredName(prog, names[i], &lowered));
        if (!(c->lowered_names[i] = kc_strdup(lowered))) break;
        c->nnames++;
    }
    c->lowered_name = c->nnames ? c->lowered_names[0] : NULL;
    if (ptx) {
        KC_NVRTC_CHECK(nv.GetPTXSize(prog, &c->len)); /* includes the NUL */
        c->image = kc_malloc(c->len);
        if (c->image) KC_NVRTC_CHECK(nv.GetPTX(prog, (char *)c->image));
        if (c->len) c->len--;
    } else {
        KC_NVRTC_CHECK(nv.GetCUBINSize(prog, &c->len));
        c->image = kc_malloc(c->len ? c->len : 1);
        if (c->image) KC_NVRTC_CHECK(nv.GetCUBIN(prog, (char *)c->image));
    }
    if (!c->image || c->nnames != nnames) rc = kc_err(KC_ENOMEM, "compile: out of memory");
done:
    return rc;
}

/* One NVRTC program for `t` with `plan` (its text, or the plain one): *stands 0 when it must be
 * compiled again without a PCH (c is then as it was). */
static int compile_once(nvrtc_call *p, const char *const *names, size_t nnames, const kc_target *t, kc_pch_plan *plan,
                        kc_compiled *c, int *stands) {
    nvrtcProgram prog = NULL;
    int rc = KC_OK, compiled = 0;
    *stands = 1;
    KC_NVRTC_CHECK(
        nv.CreateProgram(&prog, plan->text ? plan->text : p->text, p->program, (int)p->nhdr, p->hsrcs, p->hnames));
    for (size_t i = 0; i < nnames; i++) KC_NVRTC_CHECK(nv.AddNameExpression(prog, names[i]));
    compiled = 1;
    if (!(rc = call_compile(p, prog, names[0], plan, c, stands)) && *stands)
        rc = call_outputs(prog, names, nnames, t->ptx, c);
done:
    if (!compiled) kc_pch_done_(plan, 0, NULL, NULL); /* refused before compiling: said as it is */
    if (prog) nv.DestroyProgram(&prog);
    if (!*stands) { /* as it was: no log, no names */
        free(c->log);
        c->log = NULL;
    }
    return rc;
}

/* What pch.c is told of the program p of kernel k (kc_pch_plan_, kc_pch_expect_). */
static kc_pch_program program_of(const nvrtc_call *p, const kc_kernel_src *k) {
    kc_pch_program pp = {k->source, p->program, p->tk ? p->tk->program + strlen("/dev/null/") : NULL, p->argv, p->argc,
                         p->hnames, p->hsrcs, p->nhdr,
                         /* a PCH keeps what its maker's name and time expanded to (pch.c's [Note]) */
                         kc_kernel_names_main_file(k) || !kc_kernel_cacheable(k, NULL)};
    return pp;
}

void kc_compile_expect_(const kc_kernel_src *k, const kc_target *t) {
    if (!k || !k->source || !t) return;
    kc_err_saved saved; /* naming a compile fails nothing: the compile says its own errors */
    kc_err_save(&saved);
    nvrtc_call p;
    memset(&p, 0, sizeof p);
    if (kc_nvrtc_available() == KC_OK && !kc_kernel_src_arrays_ok_("kc_compile_expect_", k) && !call_inputs(&p, k) &&
        !call_prepare(&p, k, t)) {
        kc_pch_program pp = program_of(&p, k);
        kc_pch_expect_(&pp);
    }
    call_free(&p);
    kc_err_restore(&saved);
}

/* The compile itself, every check made: one NVRTC program for `t`, with a precompiled header when
 * one serves ([Note: precompiled headers] in pch.c), else (or when it did not serve) without. */
static int compile_checked(const kc_kernel_src *k, const char *const *names, size_t nnames, const kc_target *t,
                           kc_compiled **out) {
    nvrtc_call p;
    memset(&p, 0, sizeof p);
    kc_compiled *c = NULL;
    int rc = call_inputs(&p, k);
    if (!rc) rc = call_prepare(&p, k, t);
    if (!rc) {
        c = kc_calloc(1, sizeof *c);
        if (c) c->lowered_names = kc_calloc(nnames, sizeof *c->lowered_names);
        if (!c || !c->lowered_names) rc = kc_err(KC_ENOMEM, "compile: out of memory");
    }
    if (rc) goto done;
    kc_pch_program pp = program_of(&p, k);
    kc_pch_plan plan;
    int stands = 1;
    kc_pch_plan_(&pp, &plan);
    rc = compile_once(&p, names, nnames, t, &plan, c, &stands);
    if (!stands) { /* the same compile without a PCH: its result and log are the plain ones */
        pp.source = NULL;
        kc_pch_plan_(&pp, &plan);
        rc = compile_once(&p, names, nnames, t, &plan, c, &stands);
    }
    if (rc) goto done;
    kc_log(KC_LOG_COMPILE, "compiled %s (%zu entries) for %s in %.1f ms (%zu bytes)", p.file, nnames, p.tname,
           c->seconds * 1e3, c->len);
    *out = c;
    c = NULL;
done:
    kc_compiled_free(c);
    call_free(&p);
    return rc;
}

int kc_compile_names(const kc_kernel_src *k, const char *const *names, size_t nnames, const char *target,
                     kc_compiled **out) {
    if (out) *out = NULL;
    if (!k || !k->source || !names || nnames == 0 || !target || !out)
        return kc_err(KC_EINVAL, "kc_compile_names: NULL argument");
    int rc = compile_precheck(k, names, nnames);
    kc_target t;
    if (!rc) rc = kc_target_parse(target, &t); /* the public boundary: parsed here, once */
    if (!rc) rc = kc_target_compilable_(&t);
    return rc ? rc : compile_checked(k, names, nnames, &t, out);
}

int kc_compile_names_for_(const kc_kernel_src *k, const char *const *names, size_t nnames, const kc_target *target,
                          kc_compiled **out) {
    if (out) *out = NULL;
    if (!k || !k->source || !names || nnames == 0 || !target || !out)
        return kc_err(KC_EINVAL, "kc_compile_names: NULL argument");
    int rc = compile_precheck(k, names, nnames);
    if (!rc) rc = kc_target_compilable_(target); /* [Note: target check] */
    return rc ? rc : compile_checked(k, names, nnames, target, out);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_internal.h — what the files of the graph part share, and nothing outside it uses:
 * the description's storage (desc.c builds it, spec.c fills it from JSON), the KERNELS
 * section codec (kernels.c), the WRAPPERS section writer (wrapper.c), the loaded graph
 * (loaded.c) and running it (run.c).  Each block names the file that defines it.
 */
#ifndef KC_GRAPH_INTERNAL_H
#define KC_GRAPH_INTERNAL_H

#include <pthread.h>
#include <sys/stat.h>

#include "../common/internal.h"
#include "../compile/params.h"
#include "../compile/units.h"
#include "kcache/cuda.h"
#include "kcache/graph.h"
#include "kcache/program.h"

/* Limits of one description (desc.c checks them as pieces are added). */
#define KC_GRAPH_MAX_KERNELS 256
#define KC_GRAPH_MAX_STEPS 4096
/* The graph key's "kernel_binding" component: how an entry's kernels were bound to lowered names (graph_key.c). */
#define KC_GRAPH_BINDING_VERSION 2

/* ---- the description's storage (desc.c) ---- */

typedef struct gkernel {
    char *file, *source, *name, *include_digest;
    unsigned flags;         /* KC_KERNEL_* */
    kc_header_src *headers; /* owned strings */
    size_t nheaders;
    char **options;
    size_t noptions;
} gkernel;

typedef struct gtensor {
    kc_tensor_role role;
    kc_dtype dtype;
    int rank;
    char *sizes[KC_MAX_RANK];
    char *strides[KC_MAX_RANK];
    int requires_grad;
    int inplace, grad_accumulate; /* inputs: written by the graph; gradient accumulated into the caller's buffer */
    size_t alias;                 /* outputs: 1 + the input it is (kc_graph_set_alias); 0 when allocated */
} gtensor;

typedef struct gscratch {
    kc_pass pass;
    char *bytes;
} gscratch;

typedef struct gstep {
    kc_pass pass;
    int kernel;
    char *grid[3], *block[3], *shared;
    char **args;
    size_t nargs;
} gstep;

/* A zero step (kc_graph_add_zero): before the pass's kernel step number `at` (its own
 * numbering; = that pass's step count: at its end), the tensor role:index is zeroed. */
typedef struct gzero {
    kc_pass pass;
    size_t at;
    kc_tensor_role role;
    size_t index;
    char *offset, *count; /* kc_graph_add_zero_range: elements (scratch: bytes); NULL: 0, and to the end */
} gzero;

typedef struct gwrapper {
    char *name;
    uint32_t version;
    uint8_t *params;
    size_t len;
} gwrapper;

/* The key memo ([Note: key memo] in graph_key.c): the last key computed, with the identities it
 * was computed under (the cache's toolchain and toolkit headers, which are not the description's).
 * Under `mu`, so lookups of one description from many threads read and publish it safely. */
typedef struct kc_key_memo {
    pthread_mutex_t mu;
    uint64_t gen; /* bumped by every change of the description (desc.c) */
    int valid;    /* key, toolchain, toolkit hold a key of description `gen` */
    kc_key key;
    char toolchain[KC_TOOLCHAIN_ID_MAX];
    char toolkit[33];
    char vouched[KC_VARIANT_MAX + 1]; /* toolkit came from this variant's direct manifest, not a walk ("": walked;
                                           * [Note: toolkit direct mode]) */
    uint64_t direct_gen; /* gen + 1 once a hit's toolkit reads were offered (kc_graph_direct_from_entry_) */
} kc_key_memo;

/* The spec direct mode's state of a description loaded from a spec ([Note: spec direct mode] in
 * spec_direct.c): what its load read (to record), or what a memo vouched for (lazy: not read yet). */
typedef struct kc_spec_direct {
    char *abs;      /* the spec's absolute path, as at its load */
    int64_t t0;     /* CLOCK_REALTIME when the load began (the settle window counts back from it) */
    kc_buf reads;   /* "s <sig>" and "f <sig> <name>" lines of every file read */
    size_t nreads;  /* ...how many */
    int recordable; /* every file read whole, settled, unmoved during its read; the description unchanged since */
    int recorded;   /* atomic: the memo was written (or found written) in this process */
    int lazy;       /* atomic: vouched and not read yet (the fields below are the memo's; reads: its lines) */
    int verify;     /* a first-need read: every file's line kept whatever its age (compared with the memo's) */
    int failed;     /* atomic: the first-need read failed; every later reader gets fail_msg (lazy stays 1) */
    int fail_rc;
    char *fail_msg;
    size_t nkernels; /* the description's kernels (d->nkernels holds it while lazy) */
    int toolkit;     /* a kernel asks for the toolkit's headers */
    char toolchain[KC_TOOLCHAIN_ID_MAX];
    char digest[33]; /* the toolkit digest the key was computed with ("" when toolkit is 0) */
    kc_key key;      /* the key under toolchain and digest */
    kc_key key0;     /* the key under toolchain without the digest (its toolkit direct manifest's name) */
} kc_spec_direct;

/* A new field here is also carried by specialize.c's rebuild() (kc_graph_desc_specialize), or a
 * specialized description silently loses it; test_site_spec's key comparisons catch what enters
 * the key. */
struct kc_graph_desc {
    char *name, *backend;
    uint64_t globals;
    gkernel *kernels;
    size_t nkernels;
    gtensor *tensors;
    size_t ntensors;
    gscratch *scratch;
    size_t nscratch;
    gstep *steps;
    size_t nsteps;
    gzero *zeros;
    size_t nzeros; /* zero steps, in the order added (program.c interleaves them) */
    gwrapper *wrappers;
    size_t nwrappers;
    char **symbols;
    size_t nsymbols;
    char **hooks;
    size_t nhooks;     /* "name\0hash" pairs as two strings each */
    int hook_unhashed; /* a hook came without a cache hash */
    char *unhashed_hook;
    uint8_t *runtime_meta;
    size_t runtime_meta_len;
    int cacheable_memo; /* 1: every kernel was found cacheable (lookup.c); 0: not known.
                                           * Atomic (lookups of one description run on many threads);
                                           * cleared by every change that adds a kernel or a hook. */
    struct kc_argdecl *rargs;
    size_t nrargs;          /* runtime arguments, in declaration order (program.h) */
    char *spec_path;        /* the spec it was loaded from (spec.c), for messages; NULL when built in C */
    kc_key_memo key_memo;   /* not the description's meaning: never copied, never hashed */
    kc_spec_direct *direct; /* loaded from a spec: its direct mode's state (spec_direct.c); NULL otherwise */
};

/** Every builder that changes a description calls this first (desc.c): the memos go (the key's,
 *  cacheable_memo), so no lookup after the change sees a key of the description before it. */
int kc_graph_desc_changed_(kc_graph_desc *d);

/* ---- the spec direct mode (spec_direct.c; [Note: spec direct mode]) ---- */

/** Read a vouched description's content from its files, once (KC_OK at once when it is read): every
 *  reader of a description's content but the hit path calls this first.  An error keeps the spec
 *  reader's message, prefixed with the graph and what to do. */
int kc_spec_direct_ready_(const kc_graph_desc *d);
/** 1 while `d` is vouched for by a memo and not read (its kernels not there: also after a failed read). */
int kc_spec_direct_lazy_(const kc_graph_desc *d);
/** 1 while `d` is vouched for, not read, and no read of it failed: a lookup may take the memo's key. */
int kc_spec_direct_vouches_(const kc_graph_desc *d);
/** After the key of a description read whole: its memo (`key` under toolchain `tc` and toolkit
 *  digest `tk`, `key0` without the digest), once per description and process; never fails. */
void kc_spec_direct_record_(kc_cache *c, const kc_graph_desc *d, const char *tc, const char *tk, const kc_key *key,
                            const kc_key *key0);
/** A load begins: the state that records what it reads (NULL when out of memory: nothing recorded). */
kc_spec_direct *kc_spec_direct_begin_(const char *spec_path);
void kc_spec_direct_free_(kc_spec_direct *sd);
/** A file read (rel NULL: the spec itself), with its stat before and after the read (stat_ok 0: one failed). */
void kc_spec_direct_saw_(kc_spec_direct *sd, const char *rel, int stat_ok, const struct stat *before,
                         const struct stat *after);
/** 1 with *out a description vouched but not read (owning sd) when the memo of sd->abs vouches; else 0. */
int kc_spec_direct_vouch_(kc_spec_direct *sd, const char *spec_path, kc_graph_desc **out);
/** The memo's strict reader (exposed for fuzz_spec_direct): 1 when `text` is a memo of `abs` whose every
 *  file has its recorded signature now (sd's memo fields filled, *name into text), else 0. */
int kc_spec_direct_parse_(char *text, size_t len, const char *abs, kc_spec_direct *sd, char **name);
/** A file's stat signature as memos write it (XXH3 of device, inode, size, mode, mtime, ctime; never 0). */
uint64_t kc_spec_direct_sig_(const struct stat *st);
/** For tests: the settle window in ns (negative: the default, 2 s). */
void kc_spec_direct_settle_set_(int64_t ns);
/** The whole load of a spec (spec.c): `sd` (may be NULL) records what it reads; the files are read
 *  through `read_path` (NULL: spec_path), messages name spec_path and the files beside it. */
int kc_spec_load_whole_(kc_graph_desc **out, const char *spec_path, const char *read_path, kc_spec_direct *sd);

/** Check an expression's syntax and that its symbols are among `names` or device facts (expr.c). */
int kc_expr_check(const char *s, const char *const *names, size_t n);
/** kc_expr_check where a device fact is an error (an input's sizes and strides, an output's sizes). */
int kc_expr_check_nodev(const char *s, const char *const *names, size_t n);
/** kc_expr_eval with the device facts' values `dev` (KC_DEVICE_NFACTS; NULL: none bound, using one fails). */
int kc_expr_eval_dev(const char *s, const char *const *names, const int64_t *values, size_t n, const int64_t *dev,
                     int64_t *out);

/* ---- the description's builders' shared helpers (desc.c; callers: desc_writes.c) ---- */

/** Grow an array by one zeroed element; the element, or NULL when out of memory. */
void *kc_desc_grow(void **arr, size_t *n, size_t size);
/** A string the launch program will hold: KC_OK, or KC_EINVAL naming `what` when it is over the cap. */
int kc_desc_fits(const kc_graph_desc *d, const char *s, const char *what);
/** An expression over the description's symbols (KC_EEXPR naming the graph and `what`). */
int kc_desc_check_expr(const kc_graph_desc *d, const char *e, const char *what);
/** How many tensors of `role` the description declares. */
size_t kc_desc_count_role(const kc_graph_desc *d, kc_tensor_role role);
/** A dtype's name as specs spell it ("f32"), or "?". */
const char *kc_dtype_str(kc_dtype t);

/* ---- device facts, the known devices, large dynamic shared memory (device.c) ---- */

/** How many device facts there are (device_sm_count, …: the names are device.c's). */
#define KC_DEVICE_NFACTS 7
/** The index of the device fact spelled name[0..len), or -1 when it is none. */
int kc_device_fact(const char *name, size_t len);
/** Device fact i's name ("device_sm_count"); NULL past the last. */
const char *kc_device_fact_name(int i);
/** Read the facts of `device` from the driver into out[KC_DEVICE_NFACTS] (once per loaded graph). */
int kc_device_facts_read(int device, int64_t *out);
/**
 * Check a description's launches for `target` against the known devices that load it, on a
 * host without a GPU: an expression over constants and device facts alone (grid, block,
 * shared memory, scratch, e32/e64) that is out of range or fails on every such device is
 * KC_ECOMPILE naming graph, pass, step, kernel and what is wrong.  KC_OK when no known device
 * loads the target (nothing to check against).
 */
int kc_device_check_desc(const kc_graph_desc *d, const kc_target *target);
struct kc_lprog;
/**
 * Make step `step` of `p` launchable with `shared` bytes of dynamic shared memory on `g`:
 * beyond the function's current maximum it is raised (cuFuncSetAttribute, once per function
 * and size, thread-safe); beyond the device's opt-in limit less the function's static shared
 * memory it is KC_EINVAL naming step, kernel, bytes and limit.  Context must be current.
 */
int kc_device_smem_ready(kc_graph *g, const struct kc_lprog *p, size_t step, unsigned shared);
/**
 * What a loaded graph knows of one kernel's shared memory (device.c).  Two kernels may share one
 * function handle (loaded.c fetches a function several kernels name once): the function's record is
 * then the first such kernel's, `fn`, so that what one kernel raises the other sees.
 */
typedef struct kc_kfn {
    char *name;      /* the kernel's name, for messages (owned) */
    int fn;          /* the kernel whose record below holds this kernel's function: the first with its handle */
    int static_smem; /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, once read (in kfn[fn]) */
    int max_dyn;     /* the function's maximum dynamic shared memory; -1 until read (atomic, in kfn[fn]) */
} kc_kfn;

/**
 * `s` with each symbol named in names[i] replaced by repl[i] (a number or a name), found by
 * the parser, so "N" never matches inside "NN" or "min" (expr.c).  Other symbols are kept
 * unchecked.  *out is the caller's (free()); KC_EEXPR when `s` does not parse.
 */
int kc_expr_subst(const char *s, const char *const *names, const char *const *repl, size_t n, char **out);

/** The dtype of a name ("f32", "bf16", …); 0 when unknown. */
kc_dtype kc_dtype_parse(const char *s);

/** Whether `s` is a decimal count of at most 18 digits (a static size). */
int kc_graph_is_uint(const char *s);

/**
 * kc_graph_key with the cache the lookup goes through (NULL: none): its folder keeps the
 * toolkit digest memo across processes (graph_key.c).
 */
int kc_graph_key_in(kc_cache *c, const kc_graph_desc *d, kc_key *out, kc_key_builder **kb_out);
/** A lookup's key: as kc_graph_key_in, but the toolkit's digest may come from the graph's
 *  direct manifest instead of a walk (*vouched = 1; [Note: toolkit direct mode] in
 *  compile/toolkit.h): the manifest of `variant`, which vouches for that variant's entry only —
 *  a miss, or any other variant, must first confirm it with kc_graph_key_in. */
#define KC_VOUCHED_TOOLKIT 1 /* the toolkit digest came from the graph's toolkit direct manifest */
#define KC_VOUCHED_SPEC 2    /* the description's part of the key came from its spec's memo, not read */
int kc_graph_key_lookup_(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_key *out, int *vouched);
/** Watch the toolkit's tree around a compile of `d` (*w NULL when there is nothing to watch), and
 *  end it, writing the graph's direct manifest when `record` (every unit compiled under it). */
struct kc_toolkit_watch;
void kc_graph_watch_begin_(kc_cache *c, const kc_graph_desc *d, struct kc_toolkit_watch **w);
void kc_graph_watch_end_(kc_cache *c, const kc_graph_desc *d, const char *toolchain, const char *variant,
                         struct kc_toolkit_watch *w, int record, char **reads);
/** A hit of `d` under a walked digest: the direct manifest from the entry's toolkit reads, once
 *  per description and process ([Note: toolkit reads travel] in compile/toolkit.h). */
void kc_graph_direct_from_entry_(kc_cache *c, const kc_graph_desc *d, const char *variant, const kc_entry *e);

/** A kernel of a description as the compile part takes it (borrowed from the description). */
kc_kernel_src kc_graph_kernel_src(const gkernel *g);

/* ---- the KERNELS section (kernels.c; its grammar is there) ---- */

/** One kernel of a KERNELS section, viewed in place. */
typedef struct kimg {
    const char *name, *lowered, *target;
    int is_ptx;
    const uint8_t *image;
    size_t len;
    uint32_t image_index;
} kimg;

/** Write the KERNELS section of `d`: each kernel's name, lowered name (res[unit]) and image (its unit). */
void kc_kernels_encode(kc_buf *b, const kc_graph_desc *d, const kc_units *u, kc_compiled *const *res);

/**
 * The kernels of an entry's KERNELS and IMAGES sections, strictly read: *v (free()) views into
 * the entry, its strings copied into *strs (free()).  A kernel's image is the bytes attached to
 * the entry (kc_entry_attach_image), NULL when none is (its len is the reference's).
 * KC_ECORRUPT on any defect or a missing section.
 */
int kc_kernels_of(const kc_entry *e, kimg **v, size_t *n, size_t *nimages, char **strs);

/* ---- the second level: images and compile units (resolve.c, unitstore.c; [Note: two levels]) ---- */

/** Fetch, check and — when `attach` — attach every image a graph entry refers to (local, then
 *  remote): KC_OK, or KC_MISS naming what is missing or failed its check (a cost of a miss, never
 *  an error).  Without `attach` (a compile-only hit) the images are checked and not kept; `use`: a
 *  lookup's (refreshes the images' LRU times), else a maintenance read's (kc_entry_resolve). */
int kc_graph_resolve_(kc_cache *c, kc_entry *e, int attach, int use);
/* ---- compile units for one target (unitstore.c, unitobtain.c; callers: build.c, explain.c, tests) ---- */

/** A graph's kernels grouped into units, for one target parsed once at the lookup's boundary, with
 *  the toolchain identities its unit keys name.  Borrowed pointers: the caller's, for the call. */
typedef struct kc_unit_set {
    const kc_kernel_src *ks; /**< the graph's kernels */
    size_t nk;
    const kc_units *u;     /**< ...grouped into units */
    kc_target target;      /**< what every unit compiles for */
    char variant[16];      /**< its name (kc_target_name): the unit key's "target", records, messages */
    const char *toolchain; /**< the key's NVRTC identity (kc_toolchain_choice.id) */
    const char *toolkit;   /**< the toolkit headers' digest ("" when no kernel reads them) */
} kc_unit_set;

/** Fill *s; the variant name is formed here, once. */
void kc_unit_set_init_(kc_unit_set *s, const kc_kernel_src *ks, size_t nk, const kc_units *u, const kc_target *t,
                       const char *toolchain, const char *toolkit);
/** The key of unit `unit` (same identity rules as the graph key; no launches, shapes). */
int kc_unit_key_(const kc_unit_set *s, size_t unit, kc_key *out, kc_key_builder **kb_out);
/** The key of unit `unit` as a record of `record_version` is stored under ([Note: recorded names] in
 *  unitstore.c; kc_unit_key_ is this at the current version; 0: the key of the records stored before
 *  unit records were versioned — what a test needs to plant one). */
int kc_unit_key_at_(const kc_unit_set *s, size_t unit, unsigned record_version, kc_key *out, kc_key_builder **kb_out);
/** Look the units with !res[i] (and want[i], when want is given) up: local, then the remote; fills
 *  res[i] and refs[i] of those found.  A unit is found only when its record holds every name the
 *  graph asks ([Note: recorded names] in unitstore.c); lacking (may be NULL) gets, for a unit whose
 *  sound record lacks a name, that name; *nremote (may be NULL) grows by those the remote served.
 *  Returns how many were found. */
size_t kc_units_find_(kc_cache *c, const kc_unit_set *s, const int *want, const kc_key *ukeys, kc_compiled **res,
                      kc_image_ref *refs, const char **lacking, int *nremote);
/** Store a compiled unit: its image, then its record (c NULL: only make *ref). */
int kc_units_store_(kc_cache *c, const kc_unit_set *s, size_t unit, const kc_key *ukey, const kc_compiled *r,
                    const char *toolchain_meta, kc_image_ref *ref);

/** What kc_units_obtain_ fills: res and refs are the caller's arrays of u->n. */
typedef struct kc_unit_results {
    kc_compiled **res;   /**< res[unit]: the caller's (kc_units_free) */
    kc_image_ref *refs;  /**< refs[unit] */
    int ncompiled;       /**< units compiled here */
    int nremote;         /**< units the remote served (the others found were local) */
    double ms;           /**< their compiles' wall time */
    int store_rc;        /**< a unit not stored (a full disk): the graph entry must not be either */
    char store_msg[300]; /**< ...and why */
    /** When not NULL: asked once before the first compile (after must-hit's refusal); its error is the
     *  call's (a host that cannot compile says so only when a unit is not stored). */
    int (*may_compile)(void *arg);
    void *may_compile_arg;
} kc_unit_results;

/**
 * Every unit of a graph ([Note: single-flight per unit] in unitobtain.c): found stored, or compiled
 * and stored (cacheable), or compiled (not); with !reuse nothing stored is taken (the device
 * refused it): every unit is compiled afresh and stored over the old.  `label` names the graph in
 * messages; `toolchain_meta` is the toolchain string stored records carry.  Callers: build.c, cachecompile.c.
 */
int kc_units_obtain_(kc_cache *c, const kc_unit_set *s, int cacheable, int reuse, const char *label,
                     const char *toolchain_meta, kc_unit_results *r);
/* ---- the single-source compile (cachecompile.c, progmemo.c; kcache/program.h) ---- */

/** What a kc_program is made of (borrowed; kc_program_make_ copies it all into one allocation). */
typedef struct kc_program_parts {
    const unsigned char *image;
    size_t len; /**< without PTX's NUL */
    int is_ptx;
    const char *target;
    size_t n;
    const char *const *names, *const *lowered;
    const kc_param_info *const *params;
    const size_t *nparams;
    const char *key;
    int outcome;
    const char *log;
    double seconds;
} kc_program_parts;
/** A program made of `p` (freed by kc_program_free), or NULL when out of memory. */
kc_program *kc_program_make_(const kc_program_parts *p);
/** The handle's memo: a copy of the program recorded under exactly `key` and `names` (in order;
 *  outcome KC_LOOKUP_MEMORY), or NULL. */
kc_program *kc_progmemo_get_(kc_cache *c, const char *key, const char *const *names, size_t n);
/** Record a finished program of a cacheable compile in the handle's memo (bounded LRU; a copy). */
void kc_progmemo_put_(kc_cache *c, const kc_program *p);

/* ---- a missed graph made (build.c; callers: lookup.c) ---- */

/** Why the description cannot be stored (__DATE__ in a source, an unhashed hook), or NULL (memoised). */
const char *kc_graph_uncacheable_(const kc_graph_desc *d);
/**
 * Compile for `target` (parsed once, at the lookup's boundary) — each compile unit found stored is
 * not compiled again ([Note: two levels]) unless !reuse (the device refused what was stored: every
 * unit afresh) —, store unless not cacheable (images and unit records first, the graph entry last);
 * *entry_out (may be NULL) gets the entry, its images attached.  `kb` may be NULL (made here).
 */
int kc_graph_build_(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                    const kc_target *target, int reuse, kc_graph_info *info, kc_entry **entry_out);

/** The toolchain string stored unit records and images carry: this host's toolchain, and the
 *  toolkit headers' digest `headers` when not "" (build.c; callers: build.c, cachecompile.c). */
int kc_unit_toolchain_meta_(const char *headers, char meta[256]);
/** Strict (KCACHE_STRICT): the stored object this lookup found and refused (a unit record or image:
 *  signature, MAC, corrupt), as its error; KC_OK when none, or not strict (lookup.c). */
int kc_graph_strict_refusal_(kc_cache *c);
/** The toolkit headers' digest when a kernel of `d` asks for them, "" when none does (graph_key.c). */
int kc_graph_toolkit_id_(kc_cache *c, const kc_graph_desc *d, char out[33]);
/** The toolkit headers' digest for kernels that ask for them (`who` names them in errors: "graph 'x'"). */
int kc_toolkit_id_for_(kc_cache *c, const char *who, char out[33]);

/* ---- the WRAPPERS section (wrapper.c; its grammar is there) ---- */

/** Write the WRAPPERS section of `d`: the count, then each recorded wrapper. */
void kc_wrappers_encode(const kc_graph_desc *d, kc_buf *b);
/** Each recorded wrapper's bytes without the count (what the graph key hashes). */
void kc_wrappers_encode_items(const kc_graph_desc *d, kc_buf *b);

/* ---- the launch ABI and the PARAMS section (abi.c; its grammar is there) ---- */

struct kc_lprog;
/** Each kernel's parameter table read from its compiled image (*out: d->nkernels tables). */
int kc_abi_tables(const kc_graph_desc *d, const kc_units *u, int is_ptx, kc_compiled *const *res, kc_params **out);
/** Check one step's arguments against its kernel's table; `status` is what a mismatch returns.
 *  `decl` are the runtime arguments (an "arg:NAME"'s size and class are its declared type's). */
int kc_abi_check_step(int status, const char *where, const char *kernel, char *const *args, size_t nargs,
                      const kc_params *t, const struct kc_argdecl *decl, size_t ndecl);
/** Check every step of a description (KC_ECOMPILE naming graph, pass, step, argument, sizes). */
int kc_abi_check_desc(const kc_graph_desc *d, const kc_params *t);
/** Check every step of a decoded program; `names` are the kernels' names (KC_ECORRUPT). */
int kc_abi_check_program(const char *where, const struct kc_lprog *p, const kc_params *t, const char *const *names);
/** Write / strictly read the PARAMS section (n tables, one per kernel). */
void kc_abi_encode(kc_buf *b, const kc_params *t, size_t n);
int kc_abi_decode(const kc_entry *e, size_t nkernels, kc_params **out);
/** Free n tables and the array; accepts NULL. */
void kc_abi_free(kc_params *t, size_t n);

/* ---- a loaded graph (loaded.c) ---- */

struct kc_graph {
    int refs;
    kc_key key;
    int device;
    char variant[32];
    size_t nkernels, nimages;
    size_t bytes; /* of its images (the loaded-graph budget counts these) */
    uint64_t
        compile_us; /* its entry's ORIGIN compile_wall_us: what a disk or remote hit of it saves ([Note: time saved]) */
    uint64_t used;  /* the table's clock at its last lookup (LRU) */
    int in_table;   /* published: the table holds a reference */
    kc_module **modules;           /* one per image */
    void **fns;                    /* one per kernel */
    struct kc_lprog *fwd, *bwd;    /* bwd NULL when the graph has none */
    kc_wrapper_chain *chain;       /* the recorded wrappers around kc_graph_run_forward */
    struct kc_graph *next;         /* the loaded-graph table's list */
    int64_t dev[KC_DEVICE_NFACTS]; /* the device's facts, read at load (the programs' p->dev point here) */
    kc_kfn *kfn;                   /* one per kernel: name and shared memory (device.c) */
};

/** Load every kernel of an entry on `device`; KC_EDRIVER when the driver refuses an image. */
int kc_graph_load(const kc_entry *e, const kc_key *key, int device, kc_graph **out);
/** A graph of no kernel loaded from its description ([Note: kernel-less graphs] in lookup.c): its launch programs and
 *  wrappers encoded into an in-memory entry of `variant` and read back by kc_graph_load's strict path. */
int kc_graph_load_kernelless(const kc_graph_desc *d, const kc_key *key, const char *variant, int device,
                             kc_graph **out);
/** Whether the description has a backward pass: a kernel step or a zero step of pass BACKWARD (lookup.c). */
int kc_graph_desc_has_backward_(const kc_graph_desc *d);

/** The loaded graph of key+device with a new reference, or NULL ([Note: loaded graphs]). */
kc_graph *kc_loaded_find(const kc_key *key, int device);

/**
 * Hand out `g` (just loaded, one reference): if another thread published the same key and
 * device meanwhile, `g` is destroyed and theirs returned (referenced); else `g` joins the table
 * when `keep` (it then holds two references: the table's and the caller's).
 */
kc_graph *kc_loaded_publish(kc_graph *g, int keep);

/* ---- running passes (run.c); shared with cudagraph.c ---- */

/** The graph's own forward: the base callable of its wrapper chain (ctx is the kc_graph). */
int kc_graph_run_forward(void *ctx, kc_forward_call *c);

struct kc_saved {
    kc_graph *g;
    int64_t *syms;
    kc_tensor *saved;
    size_t nsaved;
    kc_tensor *inputs, *outputs; /* shallow copies: data borrowed from the caller */
    size_t ninputs, noutputs;
    kc_allocator alloc;
    int has_alloc;
    uint64_t philox[2]; /* the forward's seed and offset: backward regenerates the same numbers */
    int philox_set;
    kc_value *args; /* the forward's runtime argument values (owned): backward's when it is given none */
    size_t nargs;
};

/** Device memory through the caller's allocator, or the driver's stream-ordered one. */
int kc_dev_alloc(const kc_allocator *a, size_t bytes, void *stream, void **out);
void kc_dev_free(const kc_allocator *a, void *p, void *stream);

/** The device a loaded graph lives on. */
int kc_graph_device(const kc_graph *g);

/**
 * A copy of `src` for the call `c`: its saved tensors copied (on c->stream) into memory
 * from c->alloc, its inputs and outputs those of `c`.  Context must be current.
 */
int kc_saved_clone(kc_saved **out, const kc_saved *src, const kc_forward_call *c);

/** Free a kc_saved's host parts only (not its tensors; drops no graph reference). */
void kc_saved_free_shell(kc_saved *s);

/** Bytes spanned by a tensor's elements (0 when any size is 0). */
size_t kc_tensor_span(const kc_tensor *t);

/* What a lookup counts and credits (lookup_counts.c: [Note: time saved], [Note: one outcome]). */
/** Record the wall-clock time of the compile that made `e` (ORIGIN compile_wall_us). */
int kc_graph_set_compile_wall_(kc_entry *e, double wall_ms);
/** The wall-clock compile time `e` records, in µs; 0 when it records none. */
uint64_t kc_graph_entry_wall_us_(const kc_entry *e);
/** A disk or remote hit saved `us`: in the info (saved_ms), and counted (compile_us_saved). */
void kc_graph_hit_saved_(kc_cache *c, const kc_key *key, kc_graph_info *info, uint64_t us);
/** The one outcome of a lookup (begun at `t0`, kc_mono_ns) that built, once it ended with `rc` and `info`:
 *  of a cacheable graph a disk hit (it waited for another's compile) or a miss; else a bypass. */
void kc_graph_count_after_build_(kc_cache *c, const kc_key *key, const kc_graph_info *info, int rc, int cacheable,
                                 uint64_t t0);
/** The one outcome of a lookup (begun at `t0`) served from `source` (memory, disk, remote) or a bypass. */
void kc_graph_count_hit_(kc_cache *c, const kc_key *key, kc_graph_source source, uint64_t t0);

/** The built-in cuda_graph wrapper (cudagraph.c). */
int kc_cudagraph_wrap(const kc_callable *inner, const void *params, size_t len, kc_callable *out);
void kc_cudagraph_unwrap(kc_callable *c);

/** kc_graph_compile and kc_graph_get behind their doors (graph/info.c, lookup.c): `info_out` is a
 *  kc_graph_info of this build's version, or NULL ([Note: versioned structs] in common/api.h). */
int kc_graph_compile_(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out);
int kc_graph_get_(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out);

#endif

/*
 * main.c — the `kcache` command-line tool: inspect and maintain a cache directory.
 *
 *   kcache [--cache-dir DIR] COMMAND [OPTIONS]
 *
 * Each command is a function in the table below, with its own --help.  Output for people
 * goes to stdout; --json output is one JSON value on stdout; errors go to stderr with a
 * non-zero exit (1: the command failed or found a problem; 2: bad usage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "kcache.h"

#define EXIT_PROBLEM 1
#define EXIT_USAGE 2

typedef struct cmd {
    const char *name;
    const char *usage;
    const char *help;
    int (*run)(int argc, char **argv);
} cmd;

static const char *g_cache_dir; /* --cache-dir */

static int fail(const char *what) {
    const kc_error *e = kc_error_last();
    fprintf(stderr, "kcache: %s: %s (%s)\n", what, e->message[0] ? e->message : "failed",
            kc_status_str(e->code));
    return EXIT_PROBLEM;
}

static int usage_error(const cmd *c, const char *msg, const char *arg) {
    fprintf(stderr, "kcache %s: %s%s%s\nusage: %s\n", c->name, msg, arg ? ": " : "", arg ? arg : "",
            c->usage);
    return EXIT_USAGE;
}

static int getenv_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "false") != 0 && strcmp(v, "no") != 0 && strcmp(v, "off") != 0;
}

static int open_cache(kc_cache **out) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = g_cache_dir;
    int rc = kc_cache_open(out, &o);
    if (rc != KC_OK) return fail("cannot open the cache");
    return 0;
}

static void human_size(uint64_t b, char *out, size_t cap) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) v /= 1024, i++;
    if (i == 0) snprintf(out, cap, "%llu B", (unsigned long long)b);
    else snprintf(out, cap, "%.1f %s", v, u[i]);
}

static void iso_time(int64_t t, char *out, size_t cap) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Common option loop: handles --help and --json, returns the index of the first other arg. */
typedef struct opts {
    int json;
    const char *max_size;
    const char *positional[4];
    int npos;
} opts;

static int parse_opts(const cmd *c, int argc, char **argv, opts *o, int allow_json, int allow_max,
                      int max_pos) {
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: %s\n\n%s\n", c->usage, c->help);
            exit(0);
        } else if (allow_json && strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (allow_max && strcmp(a, "--max-size") == 0) {
            if (++i >= argc) exit(usage_error(c, "--max-size needs a value", NULL));
            o->max_size = argv[i];
        } else if (allow_max && strncmp(a, "--max-size=", 11) == 0) {
            o->max_size = a + 11;
        } else if (a[0] == '-' && a[1] != '\0') {
            exit(usage_error(c, "unknown option", a));
        } else {
            if (o->npos >= max_pos) exit(usage_error(c, "unexpected argument", a));
            o->positional[o->npos++] = a;
        }
    }
    return 0;
}

/* ---- stats ---- */

static int cmd_stats(int argc, char **argv);
static int cmd_ls(int argc, char **argv);
static int cmd_show(int argc, char **argv);
static int cmd_verify(int argc, char **argv);
static int cmd_gc(int argc, char **argv);
static int cmd_clear(int argc, char **argv);
static int cmd_get(int argc, char **argv);
static int cmd_demo(int argc, char **argv);
static int cmd_prewarm(int argc, char **argv);
static int cmd_export(int argc, char **argv);
static int cmd_import(int argc, char **argv);
static int cmd_explain(int argc, char **argv);

static const cmd commands[] = {
    {"stats", "kcache stats [--json] [--zero]",
     "Show the cache's counters, summed over every shard and every process that used it:\n"
     "entries, bytes, hits, misses, bypasses, compiles, corrupt, evictions, and more.  With a\n"
     "remote, it is probed once and its breaker state and counters are shown (remote hits,\n"
     "misses, errors, timeouts, dropped writes, puts, MAC rejections; JSON: under \"remote\").\n"
     "--zero resets the event counters (not entries or bytes).", cmd_stats},
    {"ls", "kcache ls [--json]",
     "List stored entries: key, variant, size, last use.", cmd_ls},
    {"show", "kcache show KEY[.VARIANT] [--json] [--extract DIR]",
     "Show the entries of a key (a unique prefix of at least 4 hex digits is enough):\n"
     "kernels with their targets and sizes, sections, toolchain, creation time and every\n"
     "component digest.  --extract DIR writes each cubin and PTX to DIR, for cuobjdump and\n"
     "nvdisasm.", cmd_show},
    {"verify", "kcache verify [--json]",
     "Decode and validate every entry; move corrupt ones to v1/quarantine/.\n"
     "Exits 1 when a corrupt entry was found.", cmd_verify},
    {"gc", "kcache gc [--max-size SIZE] [--json]",
     "Evict least-recently-used entries until the cache holds at most SIZE (default: the\n"
     "cache's limit, KCACHE_MAX_SIZE or 5G), collect stale temporary files and recount.", cmd_gc},
    {"clear", "kcache clear",
     "Remove every entry and the quarantine.", cmd_clear},
    {"get", "kcache get SPEC [--arch TARGET] [--json]",
     "Look a graph spec up in the cache, compiling and storing it on a miss, and say where it\n"
     "came from and how long each step took.  With --arch (sm_90, compute_80, ...) it only\n"
     "compiles and stores (no GPU needed); without, it loads on GPU 0.", cmd_get},
    {"prewarm", "kcache prewarm MANIFEST [--arch LIST] [-j N] [--remote URL] [--json]",
     "Compile every graph of MANIFEST for every target (the manifest's \"archs\", or --arch\n"
     "sm_80,sm_90,compute_80) on N threads (default: the number of cores), storing each\n"
     "variant; variants already present are hits.  No GPU needed.  Concurrent prewarms (and\n"
     "kc_graph_get) compile each variant once.  Exit 0: all succeeded; 1: some failed (with\n"
     "NVRTC's log); 2: bad usage or manifest.  --json prints {graphs, variants, compiled,\n"
     "hits, failed, seconds, results}.  --remote URL publishes every variant to the fleet's\n"
     "remote (compiled ones, and local hits the remote lacks) and waits until it is sent.", cmd_prewarm},
    {"export", "kcache export FILE [--arch LIST] [--manifest MANIFEST] [--json]",
     "Write the cache's entries (those of LIST's targets, and of MANIFEST's graphs, when\n"
     "given) to one compressed bundle FILE with a table of contents and per-entry checksums.\n"
     "Every entry is validated before it is shipped.", cmd_export},
    {"import", "kcache import FILE [--dry-run] [--json]",
     "Verify the whole bundle FILE, then write its entries into the cache.  A truncated,\n"
     "corrupt or altered bundle is refused with the reason and the cache is left untouched;\n"
     "importing twice changes nothing.  --dry-run verifies only.", cmd_import},
    {"explain", "kcache explain SPEC [--arch TARGET] [--json]",
     "Why a graph hits or misses: its key, every component's digest, and on a miss the stored\n"
     "entry nearest to it and the components that differ, down to the tensor and field\n"
     "(\"arch\", \"options\", \"inputs[0].sizes\", \"kernels[1].source\", \"toolchain\").\n"
     "TARGET defaults to GPU 0's (sm_90 without a GPU).  Counts and changes nothing.", cmd_explain},
    {"demo", "kcache demo [--manifest FILE] [--arch TARGET]",
     "The main job's demonstration: every graph of the manifest (default kernels/manifest.json)\n"
     "through the cache twice -- first cold (its entries removed), then warm -- with where\n"
     "each came from and its time.  On a GPU it then runs each graph's forward and backward\n"
     "once and compares them with a CPU reference (exit 1 on a mismatch).  Without a GPU it\n"
     "compiles for --arch (default sm_90).", cmd_demo},
};

static int cmd_stats(int argc, char **argv) {
    opts o;
    int zero = 0, n = 0;
    for (int i = 1; i < argc; i++) { /* take --zero out, leave the rest to parse_opts */
        if (strcmp(argv[i], "--zero") == 0) zero = 1;
        else argv[++n] = argv[i];
    }
    parse_opts(&commands[0], n + 1, argv, &o, 1, 0, 0);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    if (zero && kc_cache_stats_zero(c) != KC_OK) {
        kc_cache_close(c);
        return fail("cannot zero the statistics");
    }
    kc_stats s;
    if (kc_cache_stats(c, &s) != KC_OK) {
        kc_cache_close(c);
        return fail("cannot read the statistics");
    }
    kc_remote_state rs;
    int have_remote = kc_cache_remote_state(c, &rs) == KC_OK;
    int reachable = 0;
    if (have_remote) { /* probe once, so that the breaker says what the remote is like now */
        reachable = kc_cache_remote_ping(c) == KC_OK;
        kc_cache_remote_state(c, &rs);
        kc_cache_stats(c, &s);
    }
    static const kc_stat remote_ids[] = {KC_STAT_REMOTE_HITS, KC_STAT_REMOTE_MISSES, KC_STAT_REMOTE_ERRORS,
                                         KC_STAT_REMOTE_TIMEOUTS, KC_STAT_REMOTE_DROPPED, KC_STAT_REMOTE_PUTS,
                                         KC_STAT_REMOTE_SKIPPED, KC_STAT_MAC_REJECTED};
    static const char *const remote_names[] = {"hits", "misses", "errors", "timeouts", "dropped_writes", "puts",
                                               "skipped", "mac_rejected"};
    uint64_t lookups = s.v[KC_STAT_HITS] + s.v[KC_STAT_MEMORY_HITS] + s.v[KC_STAT_MISSES];
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "dir", kc_cache_dir(c));
        json_kv_u64(stdout, &first, "max_size", kc_cache_max_size(c));
        for (int i = 0; i < KC_STAT_COUNT; i++) json_kv_u64(stdout, &first, kc_stat_name((kc_stat)i), s.v[i]);
        json_kv_f64(stdout, &first, "hit_rate",
                    lookups ? (double)(s.v[KC_STAT_HITS] + s.v[KC_STAT_MEMORY_HITS]) / (double)lookups : 0.0);
        printf(", \"remote\": ");
        if (!have_remote) printf("null");
        else {
            int f2 = 1;
            printf("{");
            json_kv_str(stdout, &f2, "url", rs.url);
            json_kv_str(stdout, &f2, "breaker", kc_breaker_name(rs.breaker));
            json_kv_f64(stdout, &f2, "retry_in_ms", rs.retry_in_ms);
            printf(", \"reachable\": %s", reachable ? "true" : "false");
            for (size_t i = 0; i < sizeof remote_ids / sizeof remote_ids[0]; i++)
                json_kv_u64(stdout, &f2, remote_names[i], s.v[remote_ids[i]]);
            printf("}");
        }
        printf("}\n");
    } else {
        char sz[32], mx[32];
        human_size(s.v[KC_STAT_BYTES], sz, sizeof sz);
        human_size(kc_cache_max_size(c), mx, sizeof mx);
        printf("cache directory   %s%s\n", kc_cache_dir(c),
               kc_cache_mode(c) == 1 ? " (read-only)" : kc_cache_mode(c) == 2 ? " (disabled)" : "");
        printf("size              %s of %s (%llu entries)\n", sz, mx, (unsigned long long)s.v[KC_STAT_ENTRIES]);
        printf("hit rate          %.1f %% of %llu lookups\n",
               lookups ? 100.0 * (double)(s.v[KC_STAT_HITS] + s.v[KC_STAT_MEMORY_HITS]) / (double)lookups : 0.0,
               (unsigned long long)lookups);
        for (int i = 0; i < KC_STAT_COUNT; i++) {
            if (i == KC_STAT_BYTES || i == KC_STAT_ENTRIES) continue;
            printf("%-17s %llu\n", kc_stat_name((kc_stat)i), (unsigned long long)s.v[i]);
        }
        if (have_remote) {
            printf("remote            %s: %s, breaker %s", rs.url, reachable ? "reachable" : "unreachable",
                   kc_breaker_name(rs.breaker));
            if (rs.breaker == KC_BREAKER_OPEN) printf(" (retry in %.0f ms)", rs.retry_in_ms);
            printf("\n ");
            for (size_t i = 0; i < sizeof remote_ids / sizeof remote_ids[0]; i++)
                printf(" %s %llu", remote_names[i], (unsigned long long)s.v[remote_ids[i]]);
            printf("\n");
        } else {
            printf("remote            none (KCACHE_REMOTE or --remote URL)\n");
        }
    }
    kc_cache_close(c);
    return 0;
}

/* ---- ls ---- */

typedef struct ls_ctx {
    int json, first;
    uint64_t n;
} ls_ctx;

static int ls_item(const kc_cache_item *it, void *ctx) {
    ls_ctx *l = ctx;
    char hex[KC_KEY_HEX_LEN + 1], t[32];
    kc_key_to_hex(&it->key, hex);
    iso_time(it->last_used, t, sizeof t);
    if (l->json) {
        int first = 1;
        printf("%s\n  {", l->first ? "" : ",");
        json_kv_str(stdout, &first, "key", hex);
        json_kv_str(stdout, &first, "variant", it->variant);
        json_kv_u64(stdout, &first, "bytes", it->bytes);
        json_kv_u64(stdout, &first, "last_used", (uint64_t)it->last_used);
        json_kv_str(stdout, &first, "last_used_iso", t);
        printf("}");
        l->first = 0;
    } else {
        printf("%s  %-12s %10llu  %s\n", hex, it->variant, (unsigned long long)it->bytes, t);
    }
    l->n++;
    return 0;
}

static int cmd_ls(int argc, char **argv) {
    opts o;
    parse_opts(&commands[1], argc, argv, &o, 1, 0, 0);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    ls_ctx l = {o.json, 1, 0};
    if (o.json) printf("[");
    int rc = kc_cache_foreach(c, ls_item, &l);
    if (o.json) printf("%s]\n", l.first ? "" : "\n");
    kc_cache_close(c);
    return rc == KC_OK ? 0 : fail("listing failed");
}

/* ---- show ---- */

typedef struct show_ctx {
    char prefix[KC_KEY_HEX_LEN + 1];
    const char *variant;
    kc_cache_item found[64];
    char variants[64][KC_VARIANT_MAX + 1];
    kc_key keys[64];
    char paths[64][4096]; /* the walker's path is borrowed for one callback only */
    int n;
    int other_key; /* prefix matched two different keys */
} show_ctx;

static int show_match(const kc_cache_item *it, void *ctx) {
    show_ctx *s = ctx;
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&it->key, hex);
    if (strncmp(hex, s->prefix, strlen(s->prefix)) != 0) return 0;
    if (s->variant && strcmp(s->variant, it->variant) != 0) return 0;
    if (s->n > 0 && memcmp(s->keys[0].bytes, it->key.bytes, 16) != 0) {
        s->other_key = 1;
        return 0;
    }
    if (s->n < 64) {
        s->keys[s->n] = it->key;
        snprintf(s->variants[s->n], sizeof s->variants[0], "%s", it->variant);
        s->found[s->n] = *it;
        snprintf(s->paths[s->n], sizeof s->paths[0], "%s", it->path);
        s->found[s->n].path = s->paths[s->n];
        s->found[s->n].variant = s->variants[s->n];
        s->n++;
    }
    return 0;
}

static const char *section_name(int t) {
    switch (t) {
    case KC_SECTION_META: return "META";
    case KC_SECTION_FORWARD: return "FORWARD";
    case KC_SECTION_BACKWARD: return "BACKWARD";
    case KC_SECTION_KERNELS: return "KERNELS";
    case KC_SECTION_WRAPPERS: return "WRAPPERS";
    case KC_SECTION_RUNTIME_META: return "RUNTIME_META";
    default: return "?";
    }
}

typedef struct kctx {
    int json, first;
} kctx;

static void print_kernel(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes,
                         void *ctx) {
    kctx *k = ctx;
    if (k->json) {
        int first = 1;
        printf("%s{", k->first ? "" : ", ");
        json_kv_str(stdout, &first, "name", name);
        json_kv_str(stdout, &first, "symbol", lowered);
        json_kv_str(stdout, &first, "target", target);
        json_kv_str(stdout, &first, "kind", is_ptx ? "ptx" : "cubin");
        json_kv_u64(stdout, &first, "bytes", bytes);
        printf("}");
        k->first = 0;
    } else {
        printf("    %-22s %-10s %-5s %8zu bytes  %s\n", name, target, is_ptx ? "ptx" : "cubin", bytes, lowered);
    }
}

static int cmd_show(int argc, char **argv) {
    opts o;
    const char *extract = NULL;
    int n = 0;
    for (int i = 1; i < argc; i++) { /* take --extract DIR out, leave the rest to parse_opts */
        if (strcmp(argv[i], "--extract") == 0 && i + 1 < argc) extract = argv[++i];
        else if (strcmp(argv[i], "--extract") == 0) return usage_error(&commands[2], "--extract needs a folder", NULL);
        else argv[++n] = argv[i];
    }
    argc = n + 1;
    parse_opts(&commands[2], argc, argv, &o, 1, 0, 1);
    if (o.npos != 1) return usage_error(&commands[2], "a KEY is required", NULL);
    show_ctx *s = calloc(1, sizeof *s);
    if (!s) return fail("out of memory");
    const char *arg = o.positional[0];
    const char *dot = strchr(arg, '.');
    size_t klen = dot ? (size_t)(dot - arg) : strlen(arg);
    if (klen < 4 || klen > KC_KEY_HEX_LEN || strspn(arg, "0123456789abcdef") < klen) {
        free(s);
        return usage_error(&commands[2], "KEY must be 4 to 32 lowercase hex digits", arg);
    }
    memcpy(s->prefix, arg, klen);
    s->variant = dot ? dot + 1 : NULL;
    kc_cache *c;
    if (open_cache(&c)) {
        free(s);
        return EXIT_PROBLEM;
    }
    int rc = kc_cache_foreach(c, show_match, s);
    int ret = 0;
    if (rc != KC_OK) {
        ret = fail("listing failed");
    } else if (s->other_key) {
        fprintf(stderr, "kcache show: '%s' matches more than one key; give more digits\n", arg);
        ret = EXIT_USAGE;
    } else if (s->n == 0) {
        fprintf(stderr, "kcache show: no entry matches '%s'\n", arg);
        ret = EXIT_PROBLEM;
    }
    if (ret == 0 && o.json) printf("[");
    for (int i = 0; ret == 0 && i < s->n; i++) {
        kc_entry *e;
        char hex[KC_KEY_HEX_LEN + 1], t[32];
        kc_key_to_hex(&s->keys[i], hex);
        rc = kc_cache_get(c, &s->keys[i], s->variants[i], &e);
        if (rc != KC_OK) {
            fprintf(stderr, "kcache show: %s.%s: %s\n", hex, s->variants[i], kc_error_last()->message);
            ret = EXIT_PROBLEM;
            continue;
        }
        iso_time((int64_t)(kc_entry_created_at(e) / 1000000000ull), t, sizeof t);
        if (o.json) {
            int first = 1;
            printf("%s{", i ? ", " : "");
            json_kv_str(stdout, &first, "key", hex);
            json_kv_str(stdout, &first, "variant", s->variants[i]);
            json_kv_u64(stdout, &first, "bytes", s->found[i].bytes);
            json_kv_str(stdout, &first, "path", s->found[i].path);
            json_kv_str(stdout, &first, "toolchain", kc_entry_toolchain(e));
            json_kv_u64(stdout, &first, "created_at_ns", kc_entry_created_at(e));
            printf(", \"sections\": {");
            int f2 = 1;
            for (int ty = KC_SECTION_FORWARD; ty <= KC_SECTION_RUNTIME_META; ty++) {
                const void *d;
                size_t len;
                if (kc_entry_section(e, (kc_section_type)ty, &d, &len) == KC_OK)
                    json_kv_u64(stdout, &f2, section_name(ty), len);
            }
            printf("}, \"kernels\": [");
            kctx kc = {1, 1};
            kc_entry_kernels(e, print_kernel, &kc);
            printf("], \"digests\": {");
            f2 = 1;
            for (size_t k = 0; k < kc_entry_digest_count(e); k++) {
                const char *name;
                kc_digest d;
                char dh[KC_KEY_HEX_LEN + 1];
                kc_entry_digest_at(e, k, &name, &d);
                kc_digest_to_hex(&d, dh);
                json_kv_str(stdout, &f2, name, dh);
            }
            printf("}}");
        } else {
            printf("%s.%s\n", hex, s->variants[i]);
            printf("  file       %s (%llu bytes)\n", s->found[i].path, (unsigned long long)s->found[i].bytes);
            printf("  created    %s\n", t);
            printf("  toolchain  %s\n", kc_entry_toolchain(e)[0] ? kc_entry_toolchain(e) : "(none)");
            printf("  kernels\n");
            kctx kc = {0, 1};
            if (kc_entry_kernels(e, print_kernel, &kc) != KC_OK) printf("    (none)\n");
            printf("  sections\n");
            for (int ty = KC_SECTION_FORWARD; ty <= KC_SECTION_RUNTIME_META; ty++) {
                const void *d;
                size_t len;
                if (kc_entry_section(e, (kc_section_type)ty, &d, &len) == KC_OK)
                    printf("    %-13s %zu bytes\n", section_name(ty), len);
            }
            printf("  digests\n");
            for (size_t k = 0; k < kc_entry_digest_count(e); k++) {
                const char *name;
                kc_digest d;
                char dh[KC_KEY_HEX_LEN + 1];
                kc_entry_digest_at(e, k, &name, &d);
                kc_digest_to_hex(&d, dh);
                printf("    %-24s %s\n", name, dh);
            }
        }
        if (extract) {
            int count = 0;
            if (kc_entry_extract(e, extract, &count) != KC_OK) ret = fail("extract failed");
            else fprintf(o.json ? stderr : stdout, "  extracted %d image(s) to %s\n", count, extract);
        }
        kc_entry_free(e);
    }
    if (ret == 0 && o.json) printf("]\n");
    kc_cache_close(c);
    free(s);
    return ret;
}

/* ---- verify / gc / clear ---- */

static int cmd_verify(int argc, char **argv) {
    opts o;
    parse_opts(&commands[3], argc, argv, &o, 1, 0, 0);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    kc_verify_report r;
    int rc = kc_cache_verify(c, &r);
    kc_cache_close(c);
    if (rc != KC_OK) return fail("verify failed");
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "checked", r.checked);
        json_kv_u64(stdout, &first, "ok", r.ok);
        json_kv_u64(stdout, &first, "corrupt", r.corrupt);
        json_kv_u64(stdout, &first, "quarantined", r.quarantined);
        printf("}\n");
    } else {
        printf("checked %llu, ok %llu, corrupt %llu, quarantined %llu\n", (unsigned long long)r.checked,
               (unsigned long long)r.ok, (unsigned long long)r.corrupt, (unsigned long long)r.quarantined);
    }
    return r.corrupt ? EXIT_PROBLEM : 0;
}

static int cmd_gc(int argc, char **argv) {
    opts o;
    parse_opts(&commands[4], argc, argv, &o, 1, 1, 0);
    uint64_t max = 0;
    if (o.max_size && kc_parse_size(o.max_size, &max) != KC_OK)
        return usage_error(&commands[4], kc_error_last()->message, NULL);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    kc_gc_report r;
    int rc = kc_cache_gc(c, max, &r);
    kc_cache_close(c);
    if (rc != KC_OK) return fail("gc failed");
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "entries_before", r.entries_before);
        json_kv_u64(stdout, &first, "bytes_before", r.bytes_before);
        json_kv_u64(stdout, &first, "entries_after", r.entries_after);
        json_kv_u64(stdout, &first, "bytes_after", r.bytes_after);
        json_kv_u64(stdout, &first, "evicted", r.evicted);
        json_kv_u64(stdout, &first, "temp_removed", r.temp_removed);
        printf("}\n");
    } else {
        char a[32], b[32];
        human_size(r.bytes_before, a, sizeof a);
        human_size(r.bytes_after, b, sizeof b);
        printf("evicted %llu of %llu entries; %s -> %s; %llu stale temporary files removed\n",
               (unsigned long long)r.evicted, (unsigned long long)r.entries_before, a, b,
               (unsigned long long)r.temp_removed);
    }
    return 0;
}

static int cmd_clear(int argc, char **argv) {
    opts o;
    parse_opts(&commands[5], argc, argv, &o, 0, 0, 0);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    int rc = kc_cache_clear(c);
    kc_cache_close(c);
    if (rc != KC_OK) return fail("clear failed");
    printf("cleared\n");
    return 0;
}

/* ---- get / demo ---- */

static const char *source_name(kc_graph_source s) {
    switch (s) {
    case KC_FROM_MEMORY: return "memory";
    case KC_FROM_DISK: return "disk";
    case KC_FROM_REMOTE: return "remote";
    case KC_FROM_COMPILE: return "compiled";
    default: return "bypassed";
    }
}

/* Look one graph up: compile-only for `arch`, else load on GPU 0. */
static int lookup(kc_cache *c, const kc_graph_desc *d, const char *arch, kc_graph_info *info) {
    if (arch) return kc_graph_compile(c, d, arch, info);
    kc_graph *g = NULL;
    int rc = kc_graph_get(c, d, 0, &g, info);
    kc_graph_release(g);
    return rc;
}

static void print_info(const char *name, const kc_graph_info *i, int json) {
    if (json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "graph", name);
        json_kv_str(stdout, &first, "key", i->key);
        json_kv_str(stdout, &first, "variant", i->variant);
        json_kv_str(stdout, &first, "source", source_name(i->source));
        json_kv_str(stdout, &first, "miss_reason", i->miss_reason);
        json_kv_u64(stdout, &first, "kernels", (uint64_t)i->kernels);
        json_kv_f64(stdout, &first, "key_us", i->key_us);
        json_kv_f64(stdout, &first, "lookup_us", i->lookup_us);
        json_kv_f64(stdout, &first, "compile_ms", i->compile_ms);
        json_kv_f64(stdout, &first, "load_us", i->load_us);
        json_kv_f64(stdout, &first, "total_us", i->total_us);
        printf("}\n");
    } else {
        char t[32];
        if (i->total_us >= 1e4) snprintf(t, sizeof t, "%.1f ms", i->total_us / 1e3);
        else snprintf(t, sizeof t, "%.0f us", i->total_us);
        printf("%-14s %-10s %-8s %2d kernels %10s  (key %.0f us, lookup %.0f us, compile %.1f ms, load %.0f us)%s%s\n",
               name, i->variant, source_name(i->source), i->kernels, t, i->key_us, i->lookup_us, i->compile_ms,
               i->load_us, i->miss_reason[0] ? "  " : "", i->miss_reason);
    }
}

static const cmd *find_cmd(const char *name);

/* The arguments of get and explain: SPEC, --arch TARGET, --json, --help. */
static int spec_args(const cmd *c0, int argc, char **argv, const char **arch, opts *o) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) *arch = argv[++i];
        else if (strcmp(argv[i], "--arch") == 0) return usage_error(c0, "--arch needs a target", NULL);
        else argv[++n] = argv[i];
    }
    parse_opts(c0, n + 1, argv, o, 1, 0, 1);
    if (o->npos != 1) return usage_error(c0, "a SPEC file is required", NULL);
    return 0;
}

static int cmd_get(int argc, char **argv) {
    const cmd *c0 = find_cmd("get");
    const char *arch = NULL;
    opts o;
    int rc0 = spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    kc_target t;
    if (arch && kc_target_parse(arch, &t) != KC_OK) return usage_error(c0, kc_error_last()->message, NULL);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fprintf(stderr, "kcache get: %s\n", kc_error_last()->message);
        return EXIT_USAGE;
    }
    kc_cache *c;
    if (open_cache(&c)) {
        kc_graph_desc_free(d);
        return EXIT_PROBLEM;
    }
    kc_graph_info info;
    int rc = lookup(c, d, arch, &info);
    if (rc == KC_OK) print_info(kc_graph_desc_name(d), &info, o.json);
    else fail(kc_graph_desc_name(d));
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}

/* Load a manifest (and --arch, when given); a bad one is a usage error (exit 2). */
static int manifest_open(const char *who, const char *path, const char *arch, kc_manifest **out) {
    int rc = kc_manifest_load(out, path);
    if (rc == KC_OK && arch) rc = kc_manifest_set_archs(*out, arch);
    if (rc == KC_OK) return 0;
    fprintf(stderr, "kcache %s: %s\n", who, kc_error_last()->message);
    kc_manifest_free(*out);
    *out = NULL;
    return rc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM;
}

/* ---- prewarm ---- */

typedef struct pw_view {
    const kc_manifest *m;
    int tty, json;
    size_t *graph_left; /* variants of each graph not yet done */
} pw_view;

static void pw_bar(const kc_prewarm_report *r) {
    double el = r->seconds;
    double eta = r->done ? el / (double)r->done * (double)(r->variants - r->done) : 0;
    int width = 30, fill = r->variants ? (int)((size_t)width * r->done / r->variants) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %zu/%zu  compiled %zu  hit %zu  failed %zu  %.1fs  ETA %.1fs ", bar, r->done, r->variants,
            r->compiled + r->bypassed, r->hits, r->failed, el, eta);
    fflush(stderr);
}

static const char *pw_result_word(const kc_prewarm_result *x) {
    return x->status ? "failed" : x->info.source == KC_FROM_DISK ? "hit" : x->info.source == KC_FROM_REMOTE ? "remote_hit"
         : x->info.source == KC_FROM_BYPASS ? "bypassed" : "compiled";
}

/* Progress: a bar on a terminal, else one line per graph once all its targets are done. */
static void pw_progress(const kc_prewarm_report *r, size_t i, void *ctx) {
    pw_view *v = ctx;
    const kc_prewarm_result *res = &r->results[i];
    if (v->tty && !v->json) {
        if (res->status)
            fprintf(stderr, "\r\033[K%s %s failed:\n%s\n", res->name, kc_manifest_arch(v->m, res->arch), res->error);
        pw_bar(r);
        return;
    }
    if (--v->graph_left[res->graph] != 0) return;
    FILE *o = v->json ? stderr : stdout;
    fprintf(o, "%-14s", res->name);
    size_t na = kc_manifest_arch_count(v->m), first = res->graph * na;
    for (size_t k = first; k < first + na; k++) {
        const kc_prewarm_result *x = &r->results[k];
        const char *arch = kc_manifest_arch(v->m, x->arch);
        if (x->status || x->info.source != KC_FROM_COMPILE) fprintf(o, "  %s %s", arch, pw_result_word(x));
        else fprintf(o, "  %s compiled %.0f ms", arch, x->info.compile_ms);
    }
    fprintf(o, "\n");
    for (size_t k = first; k < first + na; k++)
        if (r->results[k].status)
            fprintf(stderr, "%s %s: %s\n", res->name, kc_manifest_arch(v->m, r->results[k].arch), r->results[k].error);
}

static void pw_print_json(const kc_prewarm_report *r, const kc_manifest *m, const kc_remote_state *rs, int publish,
                          uint64_t published, uint64_t dropped) {
    int first = 1;
    printf("{");
    json_kv_u64(stdout, &first, "graphs", r->graphs);
    json_kv_u64(stdout, &first, "variants", r->variants);
    json_kv_u64(stdout, &first, "compiled", r->compiled + r->bypassed);
    json_kv_u64(stdout, &first, "hits", r->hits);
    json_kv_u64(stdout, &first, "failed", r->failed);
    json_kv_f64(stdout, &first, "seconds", r->seconds);
    if (publish) {
        json_kv_str(stdout, &first, "remote", rs->url);
        json_kv_u64(stdout, &first, "published", published);
        json_kv_u64(stdout, &first, "publish_failed", dropped);
    }
    printf(", \"results\": [");
    for (size_t k = 0; k < r->variants; k++) {
        const kc_prewarm_result *x = &r->results[k];
        int f2 = 1;
        printf("%s{", k ? ", " : "");
        json_kv_str(stdout, &f2, "graph", x->name);
        json_kv_str(stdout, &f2, "arch", kc_manifest_arch(m, x->arch));
        json_kv_str(stdout, &f2, "key", x->info.key);
        json_kv_str(stdout, &f2, "result", pw_result_word(x));
        json_kv_f64(stdout, &f2, "compile_ms", x->info.compile_ms);
        if (x->status) json_kv_str(stdout, &f2, "error", x->error);
        printf("}");
    }
    printf("]}\n");
}

static int cmd_prewarm(int argc, char **argv) {
    const cmd *c0 = find_cmd("prewarm");
    const char *arch = NULL, *path = NULL;
    int json = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s\n\n%s\n", c0->usage, c0->help);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
            arch = argv[++i];
        } else if (strcmp(argv[i], "--remote") == 0 && i + 1 < argc) {
            setenv("KCACHE_REMOTE", argv[++i], 1);
        } else if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) return usage_error(c0, "-j needs a number from 1 to 1024", argv[i]);
            threads = (int)v;
        } else if (argv[i][0] == '-') {
            return usage_error(c0, "unknown or incomplete option", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return usage_error(c0, "unexpected argument", argv[i]);
        }
    }
    if (!path) return usage_error(c0, "a MANIFEST is required", NULL);
    kc_manifest *m;
    int rc = manifest_open("prewarm", path, arch, &m);
    if (rc) return rc;
    if (kc_manifest_arch_count(m) == 0) {
        kc_manifest_free(m);
        fprintf(stderr, "kcache prewarm: %s has no \"archs\"; give --arch\n", path);
        return EXIT_USAGE;
    }
    kc_cache *c;
    if (open_cache(&c)) {
        kc_manifest_free(m);
        return EXIT_PROBLEM;
    }
    kc_remote_state rs;
    int publish = kc_cache_remote_state(c, &rs) == KC_OK && !getenv_flag("KCACHE_REMOTE_READONLY");
    kc_stats s0, s1;
    kc_cache_stats(c, &s0);
    size_t ng = kc_manifest_graph_count(m);
    pw_view v = {m, isatty(2), json, calloc(ng, sizeof(size_t))};
    for (size_t g = 0; g < ng; g++) v.graph_left[g] = kc_manifest_arch_count(m);
    kc_prewarm_options po = KC_PREWARM_OPTIONS_INIT;
    po.jobs = threads;
    po.publish = publish;
    po.progress = pw_progress;
    po.ctx = &v;
    kc_prewarm_report *r = NULL;
    if (v.tty && !json) fprintf(stderr, "[%30s] 0/%zu ", "", ng * kc_manifest_arch_count(m));
    rc = kc_prewarm(c, m, &po, &r);
    if (!r) { /* nothing ran: a spec could not be read or parsed */
        fprintf(stderr, "%skcache prewarm: %s: %s\n", v.tty && !json ? "\n" : "", path, kc_error_last()->message);
        kc_cache_close(c);
        kc_manifest_free(m);
        free(v.graph_left);
        return rc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM;
    }
    uint64_t published = 0, dropped = 0;
    if (publish) {
        kc_cache_remote_flush(c);
        kc_cache_stats(c, &s1);
        published = s1.v[KC_STAT_REMOTE_PUTS] - s0.v[KC_STAT_REMOTE_PUTS];
        dropped = s1.v[KC_STAT_REMOTE_DROPPED] - s0.v[KC_STAT_REMOTE_DROPPED] +
                  s1.v[KC_STAT_REMOTE_ERRORS] - s0.v[KC_STAT_REMOTE_ERRORS] +
                  s1.v[KC_STAT_REMOTE_TIMEOUTS] - s0.v[KC_STAT_REMOTE_TIMEOUTS];
    }
    if (v.tty && !json) fprintf(stderr, "\n");
    if (json) {
        pw_print_json(r, m, &rs, publish, published, dropped);
    } else {
        printf("prewarm: %zu graphs, %zu variants: %zu compiled, %zu hits, %zu failed in %.1f s\n", r->graphs, r->variants,
               r->compiled + r->bypassed, r->hits, r->failed, r->seconds);
        if (publish)
            printf("remote %s: %llu published, %llu not (see kcache stats)\n", rs.url, (unsigned long long)published,
                   (unsigned long long)dropped);
    }
    size_t failed = r->failed;
    kc_prewarm_report_free(r);
    free(v.graph_left);
    kc_cache_close(c);
    kc_manifest_free(m);
    return failed ? EXIT_PROBLEM : 0;
}

static const cmd *find_cmd(const char *name) {
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(commands[k].name, name) == 0) return &commands[k];
    return &commands[0];
}

static void print_report(const char *what, const kc_bundle_report *r, int json, const char *file) {
    if (json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "file", file);
        json_kv_u64(stdout, &first, "entries", r->entries);
        json_kv_u64(stdout, &first, "bytes", r->bytes);
        json_kv_u64(stdout, &first, "written", r->written);
        json_kv_u64(stdout, &first, "unchanged", r->unchanged);
        printf("}\n");
    } else {
        printf("%s %s: %llu entries, %llu bytes", what, file, (unsigned long long)r->entries, (unsigned long long)r->bytes);
        if (strcmp(what, "exported") != 0)
            printf(", %llu written, %llu already present", (unsigned long long)r->written, (unsigned long long)r->unchanged);
        printf("\n");
    }
}

static int cmd_export(int argc, char **argv) {
    const cmd *c0 = find_cmd("export");
    const char *file = NULL, *arch = NULL, *mpath = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s\n\n%s\n", c0->usage, c0->help);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc) mpath = argv[++i];
        else if (argv[i][0] == '-') return usage_error(c0, "unknown or incomplete option", argv[i]);
        else if (!file) file = argv[i];
        else return usage_error(c0, "unexpected argument", argv[i]);
    }
    if (!file) return usage_error(c0, "a FILE is required", NULL);
    kc_manifest *m = NULL;
    kc_key *keys = NULL;
    int rc = 0;
    char **archs = NULL;
    size_t narchs = 0;
    if (mpath && (rc = manifest_open("export", mpath, NULL, &m))) return rc;
    if (arch) { /* --arch filters variants whether or not a manifest is given */
        archs = calloc(KC_MANIFEST_MAX_ARCHS, sizeof *archs);
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", arch);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
            kc_target tg;
            if (kc_target_parse(t, &tg) != KC_OK || narchs >= KC_MANIFEST_MAX_ARCHS) rc = usage_error(c0, "not a target", t);
            else archs[narchs++] = strdup(t);
        }
        if (!rc && narchs == 0) rc = usage_error(c0, "--arch needs at least one target", NULL);
    }
    kc_bundle_filter f = {(const char *const *)archs, narchs, NULL, 0};
    size_t ng = kc_manifest_graph_count(m);
    if (mpath && !rc) {
        keys = calloc(ng + 1, sizeof *keys);
        for (size_t i = 0; i < ng; i++) {
            kc_graph_desc *d = NULL;
            if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK || kc_graph_key(d, &keys[i], NULL) != KC_OK) {
                fprintf(stderr, "kcache export: %s: graphs[%zu]: %s\n", mpath, i, kc_error_last()->message);
                kc_graph_desc_free(d);
                rc = EXIT_USAGE;
                break;
            }
            kc_graph_desc_free(d);
        }
        f.keys = keys;
        f.nkeys = ng;
    }
    kc_cache *c = NULL;
    if (!rc && open_cache(&c)) rc = EXIT_PROBLEM;
    if (rc) {
        for (size_t i = 0; i < narchs; i++) free(archs[i]);
        free(archs);
        free(keys);
        kc_manifest_free(m);
        return rc;
    }
    kc_bundle_report r;
    rc = kc_bundle_export(c, file, &f, &r);
    kc_cache_close(c);
    for (size_t i = 0; i < narchs; i++) free(archs[i]);
    free(archs);
    free(keys);
    kc_manifest_free(m);
    if (rc) return fail("export failed");
    print_report("exported", &r, json, file);
    return 0;
}

static int cmd_import(int argc, char **argv) {
    const cmd *c0 = find_cmd("import");
    const char *file = NULL;
    int json = 0, dry = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s\n\n%s\n", c0->usage, c0->help);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--dry-run") == 0) dry = 1;
        else if (argv[i][0] == '-') return usage_error(c0, "unknown option", argv[i]);
        else if (!file) file = argv[i];
        else return usage_error(c0, "unexpected argument", argv[i]);
    }
    if (!file) return usage_error(c0, "a FILE is required", NULL);
    kc_cache *c;
    if (open_cache(&c)) return EXIT_PROBLEM;
    kc_bundle_report r;
    int rc = kc_bundle_import(c, file, dry, &r);
    kc_cache_close(c);
    if (rc) return fail("import refused; the cache is unchanged");
    print_report(dry ? "verified" : "imported", &r, json, file);
    return 0;
}

static int cmd_explain(int argc, char **argv) {
    const cmd *c0 = find_cmd("explain");
    const char *arch = NULL;
    opts o;
    int rc0 = spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    char dev[16] = "sm_90";
    int major, minor;
    if (!arch && kc_cuda_capability(0, &major, &minor) == KC_OK) kc_variant_for_device(major, minor, dev);
    if (!arch) arch = dev;
    kc_target t;
    if (kc_target_parse(arch, &t) != KC_OK) return usage_error(c0, kc_error_last()->message, NULL);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fprintf(stderr, "kcache explain: %s\n", kc_error_last()->message);
        return EXIT_USAGE;
    }
    kc_cache *c;
    if (open_cache(&c)) {
        kc_graph_desc_free(d);
        return EXIT_PROBLEM;
    }
    kc_explain *x = malloc(sizeof *x);
    int rc = x ? kc_graph_explain(c, d, arch, x) : KC_ENOMEM;
    if (rc == KC_OK && o.json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "graph", kc_graph_desc_name(d));
        json_kv_str(stdout, &first, "key", x->key);
        json_kv_str(stdout, &first, "variant", x->variant);
        printf(", \"hit\": %s, \"digests\": {", x->hit ? "true" : "false");
        int f2 = 1;
        for (size_t i = 0; i < x->ndigests; i++) json_kv_str(stdout, &f2, x->digests[i].name, x->digests[i].digest);
        printf("}, \"nearest\": ");
        if (x->have_nearest) json_str(stdout, x->nearest);
        else printf("null");
        printf(", \"shares_graph\": %s, \"differs\": [", x->nearest_shares_graph ? "true" : "false");
        for (size_t i = 0; i < x->ndiffs; i++) {
            if (i) printf(", ");
            json_str(stdout, x->diffs[i]);
        }
        printf("]}\n");
    } else if (rc == KC_OK) {
        printf("graph     %s\nkey       %s\nvariant   %s\nresult    %s\ndigests\n", kc_graph_desc_name(d), x->key,
               x->variant, x->hit ? "hit" : "miss");
        for (size_t i = 0; i < x->ndigests; i++) printf("  %-24s %s\n", x->digests[i].name, x->digests[i].digest);
        if (!x->hit && !x->have_nearest) printf("nearest   none: the cache holds no entry to compare with\n");
        if (x->have_nearest) {
            printf("nearest   %s%s\ndiffers  ", x->nearest, x->nearest_shares_graph ? " (same graph)" : "");
            for (size_t i = 0; i < x->ndiffs; i++) printf(" %s", x->diffs[i]);
            printf("\n");
        }
    } else {
        fail("explain failed");
    }
    free(x);
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}

/* On a GPU: each graph's forward and backward once, against its CPU reference. */
static int demo_check(kc_cache *c, const kc_manifest *m) {
    int failed = 0;
    printf("check on GPU 0 (forward and backward against the CPU reference)\n");
    for (size_t i = 0; i < kc_manifest_graph_count(m); i++) {
        kc_graph_desc *d;
        kc_graph *g = NULL;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK) continue; /* reported above */
        const char *name = kc_graph_desc_name(d);
        char msg[512];
        int rc = kc_graph_get(c, d, 0, &g, NULL);
        if (rc) snprintf(msg, sizeof msg, "%s", kc_error_last()->message);
        else rc = kcc_check(g, 0, name, msg, sizeof msg);
        printf("%-14s %-4s %s\n", name, rc == KC_OK ? "ok" : rc == KC_MISS ? "-" : "FAIL", msg);
        failed += rc != KC_OK && rc != KC_MISS;
        kc_graph_release(g);
        kc_graph_desc_free(d);
    }
    printf("\n");
    return failed;
}

static int cmd_demo(int argc, char **argv) {
    const cmd *c0 = find_cmd("demo");
    const char *mpath = "kernels/manifest.json", *arch = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc) mpath = argv[++i];
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s\n\n%s\n", c0->usage, c0->help);
            return 0;
        } else return usage_error(c0, "unknown argument", argv[i]);
    }
    int gpu = kc_cuda_available() == KC_OK;
    if (!gpu && !arch) arch = "sm_90";
    if (!gpu) printf("no GPU here (%s)\ncompiling for %s only\n\n", kc_error_last()->message, arch);
    kc_manifest *mf;
    int rc = manifest_open("demo", mpath, NULL, &mf);
    if (rc) return rc;
    kc_cache *c;
    if (open_cache(&c)) {
        kc_manifest_free(mf);
        return EXIT_PROBLEM;
    }
    int failed = 0;
    for (int pass = 0; pass < 2; pass++) {
        printf("%s pass\n", pass == 0 ? "cold" : "warm");
        for (size_t i = 0; i < kc_manifest_graph_count(mf); i++) {
            kc_graph_desc *d;
            if (kc_graph_desc_load(&d, kc_manifest_graph(mf, i)) != KC_OK) {
                fprintf(stderr, "kcache demo: %s\n", kc_error_last()->message);
                failed++;
                continue;
            }
            if (pass == 0) { /* make the cold pass really cold: forget this graph's entries */
                kc_key key;
                const char *variants[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120",
                                          "compute_80", "compute_90", arch ? arch : "sm_90"};
                if (kc_graph_key(d, &key, NULL) == KC_OK)
                    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) kc_cache_remove(c, &key, variants[v]);
            }
            kc_graph_info info;
            if (lookup(c, d, arch, &info) == KC_OK) print_info(kc_graph_desc_name(d), &info, 0);
            else {
                fail(kc_graph_desc_name(d));
                failed++;
            }
            kc_graph_desc_free(d);
        }
        printf("\n");
    }
    if (gpu) failed += demo_check(c, mf);
    kc_manifest_free(mf);
    kc_cache_close(c);
    return failed ? EXIT_PROBLEM : 0;
}

static void main_usage(FILE *f) {
    fprintf(f, "usage: kcache [--cache-dir DIR] [--remote URL] [--allow-unsafe-dir] COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].usage);
    fprintf(f, "\n'kcache COMMAND --help' describes a command.\n"
               "--remote redis://[:password@]host:port[/db] adds the fleet's shared tier to any command.\n"
               "--allow-unsafe-dir accepts a cache directory others could write to or swap (as\n"
               "KCACHE_ALLOW_UNSAFE_DIR=1); without it such a directory is refused.\n"
               "Environment: KCACHE_DIR, KCACHE_MAX_SIZE, KCACHE_READONLY, KCACHE_DISABLE, KCACHE_LOG,\n"
               "KCACHE_ALLOW_UNSAFE_DIR, "
               "KCACHE_REMOTE, KCACHE_REMOTE_READONLY, KCACHE_REMOTE_CONNECT_MS, KCACHE_REMOTE_DEADLINE_MS,\n"
               "KCACHE_REMOTE_BACKOFF_MS, KCACHE_REMOTE_TTL, KCACHE_REMOTE_MAX_VALUE, KCACHE_REMOTE_QUEUE,\n"
               "KCACHE_HMAC_KEY, KCACHE_HMAC_KEY_FILE, KCACHE_LOCK_WAIT (see README).\n");
}

int main(int argc, char **argv) {
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--cache-dir") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "kcache: --cache-dir needs a directory\n");
                return EXIT_USAGE;
            }
            g_cache_dir = argv[++i];
        } else if (strncmp(argv[i], "--cache-dir=", 12) == 0) {
            g_cache_dir = argv[i] + 12;
        } else if (strcmp(argv[i], "--remote") == 0 || strncmp(argv[i], "--remote=", 9) == 0) {
            const char *url = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : NULL;
            if (!url) {
                fprintf(stderr, "kcache: --remote needs a URL (redis://host:port/db)\n");
                return EXIT_USAGE;
            }
            setenv("KCACHE_REMOTE", url, 1); /* the flag wins over the environment */
        } else if (strcmp(argv[i], "--allow-unsafe-dir") == 0) {
            setenv("KCACHE_ALLOW_UNSAFE_DIR", "1", 1);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            main_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kcache %s\n", kc_version());
            return 0;
        } else {
            fprintf(stderr, "kcache: unknown option '%s'\n", argv[i]);
            main_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    /* --cache-dir beats KCACHE_DIR: the command line is the more specific. */
    if (g_cache_dir) setenv("KCACHE_DIR", g_cache_dir, 1);
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(argv[i], commands[k].name) == 0) return commands[k].run(argc - i, argv + i);
    fprintf(stderr, "kcache: unknown command '%s'\n", argv[i]);
    main_usage(stderr);
    return EXIT_USAGE;
}

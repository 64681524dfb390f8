/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.c — the helpers the commands of the `kcache` tool share (see cli.h).
 *
 * The one idea: anything two commands do alike is written once here, so that every command
 * reports errors, parses options, opens the cache and prints sizes, times and lookups the
 * same way.  cli_open_cache() and cli_open_cache_readonly() (for the commands that only look:
 * KC_OPEN_INSPECT) are the only places the tool opens a cache: the global options
 * reach the library as kc_options fields with KC_OPEN_OPTIONS_WIN.  The last part says what
 * the commands need to know of the three kinds of object a cache holds (graph entries, images,
 * unit records): which is which, whether an image is there, and which kernels run which image.
 *
 * Only the files of tools/kcache/ call this.  It must not change the environment
 * and holds no state of its own: the settings come in as arguments.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "json.h"

int cli_fail(const char *what) {
    const kc_error *e = kc_error_last();
    fputs("kcache: ", stderr);
    cli_put_shown(stderr, what, 0); /* a graph's name, from a spec */
    fputs(": ", stderr);
    cli_put_shown(stderr, e->message[0] ? e->message : "failed", 1);
    fprintf(stderr, " (%s)\n", kc_status_str(e->code));
    return EXIT_PROBLEM;
}

int cli_json_failed(int json, int rc, const char *msg) {
    if (!json || !rc) return rc;
    const kc_error *e = kc_error_last();
    int f = 1;
    printf("{");
    json_kv_str(stdout, &f, "result", "failed");
    json_kv_str(stdout, &f, "status", kc_status_str(msg || !e->code ? KC_EINVAL : e->code));
    json_kv_str(stdout, &f, "error", msg ? msg : e->message[0] ? e->message : "failed");
    printf("}\n");
    return rc;
}

int cli_open_cache(const cli_settings *s, kc_cache **out) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = s->dir;       /* --cache-dir beats KCACHE_DIR: the command line is the more specific */
    o.remote = s->remote; /* --remote beats KCACHE_REMOTE */
    o.flags = KC_OPEN_OPTIONS_WIN | (s->allow_unsafe_dir ? KC_OPEN_ALLOW_UNSAFE_DIR : 0u);
    int rc = kc_cache_open(out, &o);
    if (rc != KC_OK) return cli_fail("cannot open the cache");
    return 0;
}

int cli_open_cache_readonly(const cli_settings *s, kc_cache **out) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = s->dir;
    o.remote = s->remote;
    o.flags = KC_OPEN_OPTIONS_WIN | KC_OPEN_INSPECT | (s->allow_unsafe_dir ? KC_OPEN_ALLOW_UNSAFE_DIR : 0u);
    if (kc_cache_open(out, &o) != KC_OK) return cli_fail("cannot open the cache");
    struct stat st; /* as ccache: a cache that is not there yet is an empty one, said once, on stderr */
    if (lstat(kc_cache_dir(*out), &st) != 0 && errno == ENOENT) {
        char b[1024];
        fprintf(stderr, "kcache: cache directory '%s' does not exist (nothing stored yet; nothing was created)\n",
                cli_shown(kc_cache_dir(*out), b, sizeof b));
    }
    return 0;
}

void cli_human_size(uint64_t b, char *out, size_t cap) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) v /= 1024, i++;
    if (i == 0) snprintf(out, cap, "%llu B", (unsigned long long)b);
    else snprintf(out, cap, "%.1f %s", v, u[i]);
}

const char *cli_shown(const char *s, char *buf, size_t cap) {
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 <= cap; p++) {
        if (*p < 0x20 || *p >= 0x7f) o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", *p);
        else buf[o++] = (char)*p;
    }
    buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}

void cli_put_shown(FILE *f, const char *s, int keep_lines) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if ((*p < 0x20 || *p >= 0x7f) && !(keep_lines && (*p == '\n' || *p == '\t'))) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
}

void cli_iso_time(int64_t t, char *out, size_t cap) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cli_lookup(kc_cache *c, const kc_graph_desc *d, const char *arch, kc_graph_info *info) {
    if (arch) return kc_graph_compile(c, d, arch, info);
    kc_graph *g = NULL;
    int rc = kc_graph_get(c, d, 0, &g, info);
    kc_graph_release(g);
    return rc;
}

static const char *source_name(kc_graph_source s) {
    switch (s) {
    case KC_FROM_MEMORY: return "memory";
    case KC_FROM_DISK: return "disk";
    case KC_FROM_REMOTE: return "remote";
    case KC_FROM_COMPILE: return "compiled";
    default: return "bypassed";
    }
}

void cli_print_info(const char *name, const kc_graph_info *i, int json) {
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
        json_kv_u64(stdout, &first, "units", (uint64_t)(i->units > 0 ? i->units : 0));
        json_kv_u64(stdout, &first, "units_compiled", (uint64_t)(i->units_compiled > 0 ? i->units_compiled : 0));
        json_kv_f64(stdout, &first, "saved_ms", i->saved_ms);
        if (i->store_status != KC_OK) { /* compiled, not stored: why (kc_error_last() of the lookup) */
            json_kv_str(stdout, &first, "store_status", kc_status_str(i->store_status));
            json_kv_str(stdout, &first, "store_error", kc_error_last()->message);
        }
        printf("}\n");
    } else {
        char t[32], u[48] = "", sv[40] = "", nm[4 * 256 + 1], v[4 * 32 + 1], why[4 * sizeof i->miss_reason + 1];
        cli_shown(name, nm, sizeof nm); /* a spec's name, the reason (it may quote names), escaped */
        cli_shown(i->variant, v, sizeof v);
        cli_shown(i->miss_reason, why, sizeof why);
        if (i->saved_ms > 0) snprintf(sv, sizeof sv, ", saved %.1f ms of compile", i->saved_ms);
        if (i->total_us >= 1e4) snprintf(t, sizeof t, "%.1f ms", i->total_us / 1e3);
        else snprintf(t, sizeof t, "%.0f us", i->total_us);
        if (i->units > 0) snprintf(u, sizeof u, " (%d of %d units)", i->units_compiled, i->units);
        printf(
            "%-14s %-10s %-8s %2d kernels %10s  (key %.0f us, lookup %.0f us, compile %.1f ms%s, load %.0f us%s)%s%s\n",
            nm, v, source_name(i->source), i->kernels, t, i->key_us, i->lookup_us, i->compile_ms, u, i->load_us, sv,
            why[0] ? "  " : "", why);
    }
}

int cli_manifest_open(const char *who, const char *path, const char *arch, kc_manifest **out) {
    int rc = kc_manifest_load(out, path);
    if (rc == KC_OK && arch) rc = kc_manifest_set_archs(*out, arch);
    if (rc == KC_OK) return 0;
    fprintf(stderr, "kcache %s: %s\n", who, kc_error_last()->message);
    kc_manifest_free(*out);
    *out = NULL;
    return rc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM;
}

/* ---- the objects a cache holds ([Note: two levels] in kcache/entry.h) ---- */

cli_kind cli_kind_of(const char *variant) {
    if (strcmp(variant, KC_VARIANT_IMAGE) == 0) return CLI_IMAGE;
    if (strcmp(variant, KC_VARIANT_UNIT) == 0) return CLI_UNIT;
    return CLI_GRAPH;
}

void cli_sha256_hex(const uint8_t sha[32], char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", sha[i]);
}

cli_image_state cli_image_state_of(kc_cache *c, const kc_image_ref *ref) {
    kc_entry *img;
    int rc = kc_cache_peek(c, &ref->id, KC_VARIANT_IMAGE, &img); /* local only; counts nothing */
    if (rc == KC_OK) {
        rc = kc_image_entry_read(img, ref, 0, NULL, NULL, NULL);
        kc_entry_free(img);
        return rc == KC_OK ? CLI_IMAGE_PRESENT : CLI_IMAGE_CORRUPT;
    }
    if (rc == KC_ECORRUPT) return CLI_IMAGE_CORRUPT;
    return kc_cache_exists(c, &ref->id, KC_VARIANT_IMAGE) == 1 ? CLI_IMAGE_PRESENT : CLI_IMAGE_MISSING;
}

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One str of KERNELS (len:u32, 1..4096 bytes without NUL) copied to *sp, NUL-terminated; 0 when malformed. */
static int rd_str(const uint8_t **p, size_t *left, char **sp, const char **out) {
    if (*left < 4) return 0;
    uint32_t l = rd_u32(*p);
    *p += 4, *left -= 4;
    if (l == 0 || l > 4096 || l > *left || memchr(*p, 0, l)) return 0;
    memcpy(*sp, *p, l);
    (*sp)[l] = '\0';
    *out = *sp;
    *sp += l + 1;
    *p += l, *left -= l;
    return 1;
}

int cli_entry_kernels(const kc_entry *e, size_t nimages, cli_kernel **out, size_t *n) {
    *out = NULL;
    *n = 0;
    const void *data;
    size_t len;
    int rc = kc_entry_section(e, KC_SECTION_KERNELS, &data, &len);
    if (rc) return rc;
    const uint8_t *p = data;
    size_t left = len;
    /* every kernel takes at least 14 bytes (two 1-byte strings and an index): so count is bounded by len */
    uint32_t count = left >= 4 ? rd_u32(p) : 0;
    if (left < 4 || count == 0 || count > (left - 4) / 14) {
        return KC_ECORRUPT;
    }
    p += 4, left -= 4;
    cli_kernel *k = malloc(count * sizeof *k + len + count * 2);
    if (!k) return KC_ENOMEM;
    char *sp = (char *)(k + count);
    for (uint32_t i = 0; i < count; i++) {
        if (!rd_str(&p, &left, &sp, &k[i].name) || !rd_str(&p, &left, &sp, &k[i].lowered) || left < 4 ||
            (k[i].image = rd_u32(p)) >= nimages) {
            free(k);
            return KC_ECORRUPT;
        }
        p += 4, left -= 4;
    }
    if (left) {
        free(k);
        return KC_ECORRUPT; /* bytes after the last kernel */
    }
    *out = k;
    *n = count;
    return KC_OK;
}

const char *cli_kernels_of_image(const cli_kernel *k, size_t n, uint32_t image, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    char one[4 * 4096 + 1];
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (k[i].image != image) continue;
        int w = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", cli_shown(k[i].name, one, sizeof one));
        if (w < 0) break;
        o += (size_t)w < cap - o ? (size_t)w : cap - o - 1;
    }
    return buf;
}

/* ---- coverage ([Note] in kcache/prewarm.h: kc_manifest_covered) ---- */

void cli_coverage_missing(FILE *f, const char *who, const kc_coverage_report *r) {
    char a[256], b[64], c[2048];
    for (size_t i = 0; i < r->graphs * r->targets; i++) {
        const kc_coverage_result *x = &r->results[i];
        if (x->hit) continue;
        fprintf(f, "kcache %s: missing %s %s: %s\n", who, cli_shown(x->name, a, sizeof a),
                cli_shown(r->target_names[x->target], b, sizeof b), cli_shown(x->reason, c, sizeof c));
    }
}

void cli_coverage_json(FILE *f, int *first, const char *manifest, const kc_coverage_report *r) {
    json_kv_str(f, first, "manifest", manifest);
    if (r->device >= 0) json_kv_u64(f, first, "device", (uint64_t)r->device);
    json_key(f, first, "targets");
    fprintf(f, "[");
    for (size_t t = 0; t < r->targets; t++) fprintf(f, "%s", t ? ", " : ""), json_str(f, r->target_names[t]);
    fprintf(f, "]");
    json_kv_u64(f, first, "graphs", r->graphs);
    json_kv_u64(f, first, "variants", r->graphs * r->targets);
    json_kv_u64(f, first, "hits", r->covered);
    json_kv_bool(f, first, "covered", r->missing == 0);
    json_key(f, first, "missing");
    fprintf(f, "[");
    for (size_t i = 0, n = 0; i < r->graphs * r->targets; i++) {
        const kc_coverage_result *x = &r->results[i];
        if (x->hit) continue;
        int g = 1;
        fprintf(f, "%s{", n++ ? ", " : "");
        json_kv_str(f, &g, "graph", x->name);
        json_kv_str(f, &g, "target", r->target_names[x->target]);
        json_kv_str(f, &g, "reason", x->reason);
        fprintf(f, "}");
    }
    fprintf(f, "]");
    json_key(f, first, "results");
    fprintf(f, "[");
    for (size_t i = 0; i < r->graphs * r->targets; i++) {
        const kc_coverage_result *x = &r->results[i];
        int g = 1;
        fprintf(f, "%s{", i ? ", " : "");
        json_kv_str(f, &g, "graph", x->name);
        json_kv_str(f, &g, "target", r->target_names[x->target]);
        json_kv_str(f, &g, "key", x->key);
        json_kv_str(f, &g, "result", x->hit ? "hit" : "missing");
        json_kv_str(f, &g, "variant", x->variant);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

int cli_setting_on(const kc_config *cfg, int id) {
    char v[16];
    return cfg && kc_config_get(cfg, id, v, sizeof v, NULL, NULL, 0) == KC_OK && strcmp(v, "true") == 0;
}

/* ---- targets ([Note: target check] in kcache/target.h) ---- */

int cli_target_check(kc_cache *c, const char *who, const char *name, const char *where, int stored) {
    kc_target_list l = KC_TARGET_LIST_INIT;
    int rc = stored ? kc_target_table(&l) : kc_cache_targets(c, &l);
    if (rc == KC_OK) rc = kc_target_check(&l, name, where, NULL);
    if (rc != KC_OK && stored && kc_target_supported(NULL, &l) == KC_OK && l.from == KC_TARGETS_NVRTC)
        rc = kc_target_check(&l, name, where, NULL); /* newer than the table: this NVRTC's */
    if (rc == KC_OK) return 0;
    fprintf(stderr, "kcache %s: %s\n", who, kc_error_last()->message);
    return EXIT_USAGE;
}

int cli_manifest_targets_check(kc_cache *c, const char *who, const kc_manifest *m, const char *path, const char *arch) {
    char where[4200], shown[4096];
    for (size_t i = 0; i < kc_manifest_arch_count(m); i++) {
        if (arch) snprintf(where, sizeof where, "--arch");
        else snprintf(where, sizeof where, "manifest %s, archs[%zu]", cli_shown(path, shown, sizeof shown), i);
        int rc = cli_target_check(c, who, kc_manifest_arch(m, i), where, 0);
        if (rc) return rc;
    }
    return 0;
}

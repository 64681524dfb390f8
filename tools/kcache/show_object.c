/* SPDX-License-Identifier: Apache-2.0 */
/*
 * show_object.c — what `kcache show` prints of one stored object, once cmd_show.c has found it: a
 * graph entry (its images resolved as a lookup resolves them, kernels, parameter tables, sections,
 * digests; --extract writes its images), an image (its reference, whether its bytes are its
 * digests', and the graph entries and unit records that refer to it), a unit record (its image and
 * each name expression's lowered name); each in text or as one JSON object.
 *
 * The one idea: every object opens with the same head (name, file, creation time, toolchain,
 * origin, provenance) and then what its kind holds; every name taken from an object is printed
 * through cli_shown() (text) or the JSON writers, so an imported object cannot send escape
 * sequences to the terminal.  Callers: cmd_show.c only (show.h).
 *
 * Must not: count a use or refresh anything (entries are peeked, not got), or trust a section's
 * bytes beyond what kc_*_entry_read checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "kcache/sys/store.h" /* kc_provenance_read */
#include "show.h"

static const char *section_name(int t) {
    switch (t) {
    case KC_SECTION_META: return "META";
    case KC_SECTION_FORWARD: return "FORWARD";
    case KC_SECTION_BACKWARD: return "BACKWARD";
    case KC_SECTION_KERNELS: return "KERNELS";
    case KC_SECTION_WRAPPERS: return "WRAPPERS";
    case KC_SECTION_RUNTIME_META: return "RUNTIME_META";
    case KC_SECTION_PARAMS: return "PARAMS";
    case KC_SECTION_IMAGES: return "IMAGES";
    case KC_SECTION_IMAGE: return "IMAGE";
    case KC_SECTION_UNIT: return "UNIT";
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
        char n[SHOWN_CAP], t[SHOWN_CAP], l[SHOWN_CAP];
        printf("    %-22s %-10s %-5s %8zu bytes  %s\n", cli_shown(name, n, sizeof n), cli_shown(target, t, sizeof t),
               is_ptx ? "ptx" : "cubin", bytes, cli_shown(lowered, l, sizeof l));
    }
}

/* One kernel's parameter table: "8@0 4@8:int …" (size@offset, with the class when the image says it). */
static void print_params(const char *name, const char *lowered, const kc_param_info *p, size_t n, void *ctx) {
    kctx *k = ctx;
    (void)lowered;
    if (k->json) {
        int first = 1;
        printf("%s{", k->first ? "" : ", ");
        json_kv_str(stdout, &first, "kernel", name);
        printf(", \"params\": [");
        for (size_t i = 0; i < n; i++) {
            int f = 1;
            printf("%s{", i ? ", " : "");
            json_kv_u64(stdout, &f, "offset", p[i].offset);
            json_kv_u64(stdout, &f, "size", p[i].size);
            json_kv_u64(stdout, &f, "align", p[i].align);
            json_kv_str(stdout, &f, "class", p[i].cls);
            printf("}");
        }
        printf("]}");
        k->first = 0;
        return;
    }
    char nm[SHOWN_CAP];
    printf("    %-22s (", cli_shown(name, nm, sizeof nm));
    for (size_t i = 0; i < n; i++)
        printf("%s%u@%u%s%s", i ? " " : "", p[i].size, p[i].offset, strcmp(p[i].cls, "any") ? ":" : "",
               strcmp(p[i].cls, "any") ? p[i].cls : "");
    printf(")  %zu parameter%s, %u bytes\n", n, n == 1 ? "" : "s", n ? p[n - 1].offset + p[n - 1].size : 0);
}

static void print_sections(const kc_entry *e, int json) {
    int f2 = 1;
    if (json) printf(", \"sections\": {");
    else printf("  sections\n");
    for (int ty = KC_SECTION_FORWARD; ty <= KC_SECTION_UNIT; ty++) {
        const void *d;
        size_t len;
        if (kc_entry_section(e, (kc_section_type)ty, &d, &len) != KC_OK) continue;
        if (json) json_kv_u64(stdout, &f2, section_name(ty), len);
        else printf("    %-13s %zu bytes\n", section_name(ty), len);
    }
    if (json) printf("}");
}

static void print_digests(const kc_entry *e, int json) {
    int f2 = 1;
    if (json) printf(", \"digests\": {");
    else printf("  digests\n");
    for (size_t k = 0; k < kc_entry_digest_count(e); k++) {
        const char *name;
        kc_digest d;
        char dh[KC_KEY_HEX_LEN + 1], buf[SHOWN_CAP];
        kc_entry_digest_at(e, k, &name, &d);
        kc_digest_to_hex(&d, dh);
        if (json) json_kv_str(stdout, &f2, name, dh);
        else printf("    %-24s %s\n", cli_shown(name, buf, sizeof buf), dh);
    }
    if (json) printf("}");
}

/* The local file's provenance ([Note: provenance record] in src/store/local.c): where its bytes came
 * from and what verified them, as this host recorded it — beside the ORIGIN the producer wrote. */
static void print_provenance(const char *path, int json, int *first) {
    kc_provenance p;
    char buf[SHOWN_CAP], t[32];
    int rc = kc_provenance_read(path, &p);
    if (json) {
        if (rc != KC_OK) return;
        int f = 1;
        json_key(stdout, first, "provenance");
        printf("{");
        json_kv_str(stdout, &f, "kind", kc_provenance_kind_name(p.kind));
        json_kv_bool(stdout, &f, "recorded", p.recorded);
        json_kv_bool(stdout, &f, "unavailable", p.unavailable);
        if (p.source[0]) json_kv_str(stdout, &f, "source", p.source);
        if (p.verifier[0]) json_kv_str(stdout, &f, "verifier", p.verifier);
        if (p.created > 0) json_kv_u64(stdout, &f, "recorded_at", (uint64_t)p.created);
        printf("}");
        return;
    }
    if (rc != KC_OK) {
        printf("  provenance unreadable: %s\n", cli_shown(kc_error_last()->message, buf, sizeof buf));
        return;
    }
    printf("  provenance ");
    if (p.recorded && p.kind == KC_PROV_COMPILED) printf("compiled here");
    else if (p.recorded)
        printf("%s %s verified=%s", kc_provenance_kind_name(p.kind), cli_shown(p.source, buf, sizeof buf), p.verifier);
    else if (p.kind == KC_PROV_COMPILED)
        printf("compiled here (mode 0600; %s)", p.unavailable ? "the detail is unavailable: the "
                                                                "file system keeps no extended attributes"
                                                              : "no record beside the mode");
    else
        printf("fetched or imported (mode 0400); where from is %s", p.unavailable
                                                                        ? "unavailable: the file system keeps no "
                                                                          "extended attributes"
                                                                        : "not recorded");
    if (p.recorded && p.created > 0) {
        cli_iso_time(p.created, t, sizeof t);
        printf(", %s", t);
    }
    printf("\n");
}

/* The head every object shares: name, file, creation time, toolchain (JSON: the object's opening fields). */
static void print_head(const kc_cache_item *it, const kc_entry *e, const char *kind, int json, int first_obj) {
    char hex[KC_KEY_HEX_LEN + 1], t[32], buf[SHOWN_CAP];
    kc_key_to_hex(&it->key, hex);
    cli_iso_time((int64_t)(kc_entry_created_at(e) / 1000000000ull), t, sizeof t);
    if (json) {
        int first = 1;
        printf("%s{", first_obj ? "" : ", ");
        json_kv_str(stdout, &first, "key", hex);
        json_kv_str(stdout, &first, "variant", it->variant);
        json_kv_str(stdout, &first, "object", kind);
        json_kv_u64(stdout, &first, "bytes", it->bytes);
        json_kv_str(stdout, &first, "path", it->path);
        json_kv_str(stdout, &first, "toolchain", kc_entry_toolchain(e));
        json_kv_u64(stdout, &first, "created_at_ns", kc_entry_created_at(e));
        static const char *const origin_names[] = {"graph",    "host",       "producer",
                                                   "manifest", "compile_us", "compile_wall_us"};
        char v[KC_ORIGIN_VALUE_MAX + 1];
        for (size_t i = 0; i < sizeof origin_names / sizeof origin_names[0]; i++) /* ORIGIN: where it came from */
            if (kc_entry_origin(e, origin_names[i], v, sizeof v) == KC_OK)
                json_kv_str(stdout, &first, origin_names[i], v);
        print_provenance(it->path, 1, &first);
        return;
    }
    printf("%s.%s  (%s)\n", hex, cli_shown(it->variant, buf, sizeof buf), kind);
    char gname[KC_ORIGIN_VALUE_MAX + 1];
    if (kc_entry_origin(e, "graph", gname, sizeof gname) == KC_OK) /* the graph's name, as `ls` shows it */
        printf("  graph      %s\n", cli_shown(gname, buf, sizeof buf));
    printf("  file       %s (%llu bytes)\n", cli_shown(it->path, buf, sizeof buf), (unsigned long long)it->bytes);
    printf("  created    %s\n", t);
    printf("  toolchain  %s\n",
           kc_entry_toolchain(e)[0] ? cli_shown(kc_entry_toolchain(e), buf, sizeof buf) : "(none)");
    char host[KC_ORIGIN_VALUE_MAX + 1], prod[KC_ORIGIN_VALUE_MAX + 1], man[KC_ORIGIN_VALUE_MAX + 1], cu[32];
    int hh = kc_entry_origin(e, "host", host, sizeof host) == KC_OK,
        hp = kc_entry_origin(e, "producer", prod, sizeof prod) == KC_OK,
        hm = kc_entry_origin(e, "manifest", man, sizeof man) == KC_OK,
        hc = kc_entry_origin(e, "compile_us", cu, sizeof cu) == KC_OK;
    if (hh || hp || hm || hc) { /* ORIGIN: where it came from (what the producer wrote; a signature vouches for it) */
        printf("  origin    ");
        if (hh) printf(" compiled on %s", cli_shown(host, buf, sizeof buf));
        if (hp) printf(", signed by key %s", cli_shown(prod, buf, sizeof buf));
        if (hm) printf(", for %s", cli_shown(man, buf, sizeof buf));
        if (hc) printf("%sNVRTC %.1f ms", hh || hp || hm ? ", " : " ", strtod(cu, NULL) / 1e3);
        printf("\n");
    }
    print_provenance(it->path, 0, NULL);
}

/* One image reference, in JSON or as two lines (the second: its kernels, for a graph's image). */
static void print_ref(const kc_image_ref *r, const char *state, const char *kernels, int json, int *first) {
    char id[KC_KEY_HEX_LEN + 1], sha[65];
    kc_key_to_hex(&r->id, id);
    cli_sha256_hex(r->sha256, sha);
    if (json) {
        json_kv_str(stdout, first, "id", id);
        json_kv_str(stdout, first, "target", r->target);
        json_kv_str(stdout, first, "kind", r->is_ptx ? "ptx" : "cubin");
        json_kv_u64(stdout, first, "bytes", r->len);
        json_kv_str(stdout, first, "sha256", sha);
        if (state) json_kv_bool(stdout, first, "present", strcmp(state, "present") == 0);
        if (state) json_kv_str(stdout, first, "state", state);
        return;
    }
    printf("    %s  %-10s %-5s %9llu bytes%s%s\n      sha256 %s\n", id, r->target, r->is_ptx ? "ptx" : "cubin",
           (unsigned long long)r->len, state ? "  " : "", state ? state : "", sha);
    if (kernels) printf("      kernels %s\n", kernels[0] ? kernels : "(none)");
}

/* A graph entry: its images resolved (fetched and checked as a lookup would), then everything else. */
int show_graph(kc_cache *c, const kc_cache_item *it, kc_entry *e, int json, int first_obj, const char *extract) {
    char buf[SHOWN_CAP];
    kc_image_ref *refs = NULL;
    size_t nrefs = 0;
    cli_kernel *ks = NULL;
    size_t nks = 0;
    int irc = kc_entry_images(e, &refs, &nrefs);
    char why[1024] = "";
    if (irc)
        snprintf(why, sizeof why, "%s", irc == KC_MISS ? "the entry has no IMAGES section" : kc_error_last()->message);
    int resolved = 0;
    if (!irc) {
        resolved = kc_entry_resolve(c, e) == KC_OK;
        if (!resolved) snprintf(why, sizeof why, "%s", kc_error_last()->message);
        if (cli_entry_kernels(e, nrefs, &ks, &nks) != KC_OK) nks = 0, ks = NULL;
    }
    size_t missing = 0;
    for (size_t i = 0; i < nrefs; i++) {
        const void *b;
        size_t l;
        missing += kc_entry_attached_image(e, i, &b, &l) != KC_OK;
    }
    print_head(it, e, "graph entry", json, first_obj);
    if (json) {
        printf(", \"images\": ");
        if (irc) printf("null");
        else {
            printf("[");
            for (size_t i = 0; i < nrefs; i++) {
                const void *b;
                size_t l;
                int f = 1;
                printf("%s{", i ? ", " : "");
                print_ref(&refs[i], kc_entry_attached_image(e, i, &b, &l) == KC_OK ? "present" : "missing", NULL, 1,
                          &f);
                printf(", \"kernels\": [");
                for (size_t k = 0, n = 0; k < nks; k++)
                    if (ks[k].image == i) printf("%s", n++ ? ", " : ""), json_str(stdout, ks[k].name);
                printf("]}");
            }
            printf("]");
        }
        json_kv_bool(stdout, &(int){0}, "images_present", !irc && resolved);
        if (why[0]) json_kv_str(stdout, &(int){0}, "images_problem", why);
        printf(", \"kernels\": [");
        kctx kc = {1, 1};
        kc_entry_kernels(e, print_kernel, &kc);
        printf("], \"parameters\": [");
        kc.first = 1;
        kc_entry_params(e, print_params, &kc);
        printf("]");
        print_sections(e, 1);
        print_digests(e, 1);
        printf("}");
    } else {
        if (irc) printf("  images     (none: %s)\n", cli_shown(why, buf, sizeof buf));
        else if (!missing) printf("  images     %zu, all present\n", nrefs);
        else
            printf("  images     %zu, %zu missing: a lookup of this graph is a miss (%s)\n", nrefs, missing,
                   cli_shown(why, buf, sizeof buf));
        for (size_t i = 0; i < nrefs; i++) {
            const void *b;
            size_t l;
            char kn[SHOWN_CAP];
            cli_kernels_of_image(ks, nks, (uint32_t)i, kn, sizeof kn);
            print_ref(&refs[i], kc_entry_attached_image(e, i, &b, &l) == KC_OK ? "present" : "missing", kn, 0, NULL);
        }
        printf("  kernels\n");
        kctx kc = {0, 1};
        if (kc_entry_kernels(e, print_kernel, &kc) != KC_OK)
            printf("    (none: %s)\n", cli_shown(kc_error_last()->message, buf, sizeof buf));
        printf(
            "  parameters (size@offset, as the compiler laid them out; every launch step was checked against them)\n");
        if (kc_entry_params(e, print_params, &kc) != KC_OK)
            printf("    (none: %s)\n", cli_shown(kc_error_last()->message, buf, sizeof buf));
        print_sections(e, 0);
        print_digests(e, 0);
    }
    int ret = 0;
    if (extract) {
        int count = 0;
        if (kc_entry_extract(e, extract, &count) != KC_OK) {
            fprintf(stderr, "kcache show: extract failed: %s\n", cli_shown(kc_error_last()->message, buf, sizeof buf));
            ret = EXIT_PROBLEM;
        } else {
            fprintf(json ? stderr : stdout, "  extracted %d image(s) to %s\n", count,
                    cli_shown(extract, buf, sizeof buf));
        }
    }
    free(ks);
    free(refs);
    return ret;
}

/* Who refers to an image: every graph entry (with the kernels that run it), or every unit record
 * (`want`), read without counting or refreshing anything. */
typedef struct users_ctx {
    kc_cache *c;
    kc_key id;
    cli_kind want;
    int json, first;
    size_t n;
} users_ctx;

static int users_visit(const kc_cache_item *it, void *ctx) {
    users_ctx *u = ctx;
    if (cli_kind_of(it->variant) != u->want) return 0;
    kc_entry *e;
    if (kc_cache_peek(u->c, &it->key, it->variant, &e) != KC_OK) return 0;
    char hex[KC_KEY_HEX_LEN + 1], v[SHOWN_CAP], kn[SHOWN_CAP];
    kc_key_to_hex(&it->key, hex);
    if (u->want == CLI_UNIT) {
        kc_image_ref ref;
        if (kc_unit_entry_read(e, &ref, NULL, 0, NULL) == KC_OK && memcmp(ref.id.bytes, u->id.bytes, 16) == 0) {
            if (u->json) printf("%s\"%s.%s\"", u->first ? "" : ", ", hex, KC_VARIANT_UNIT);
            else printf("    unit record %s.%s\n", hex, KC_VARIANT_UNIT);
            u->first = 0;
            u->n++;
        }
        kc_entry_free(e);
        return 0;
    }
    kc_image_ref *refs;
    size_t n;
    if (kc_entry_images(e, &refs, &n) == KC_OK) {
        cli_kernel *ks = NULL;
        size_t nks = 0;
        if (cli_entry_kernels(e, n, &ks, &nks) != KC_OK) ks = NULL, nks = 0;
        for (size_t i = 0; i < n; i++) {
            if (memcmp(refs[i].id.bytes, u->id.bytes, 16) != 0) continue;
            if (u->json) {
                int f = 1;
                char name[KC_KEY_HEX_LEN + 2 + KC_VARIANT_MAX];
                snprintf(name, sizeof name, "%s.%s", hex, it->variant);
                printf("%s{", u->first ? "" : ", ");
                json_kv_str(stdout, &f, "graph", name);
                printf(", \"kernels\": [");
                for (size_t k = 0, m = 0; k < nks; k++)
                    if (ks[k].image == i) printf("%s", m++ ? ", " : ""), json_str(stdout, ks[k].name);
                printf("]}");
            } else {
                cli_kernels_of_image(ks, nks, (uint32_t)i, kn, sizeof kn);
                printf("    graph %s.%s  kernels %s\n", hex, cli_shown(it->variant, v, sizeof v),
                       kn[0] ? kn : "(none)");
            }
            u->first = 0;
            u->n++;
            break; /* a graph that runs one image twice is one user */
        }
        free(ks);
        free(refs);
    }
    kc_entry_free(e);
    return 0;
}

/* An image: its reference, whether its bytes are its digests' (both checked), and who refers to it. */
int show_image(kc_cache *c, const kc_cache_item *it, const kc_entry *e, int json, int first_obj) {
    char buf[SHOWN_CAP];
    kc_image_ref ref;
    int rc = kc_image_entry_read(e, NULL, 1, &ref, NULL, NULL); /* full: SHA-256 too */
    char why[1024] = "";
    if (rc) snprintf(why, sizeof why, "%s", kc_error_last()->message);
    print_head(it, e, "image", json, first_obj);
    int f = 0;
    if (json) {
        if (!rc) {
            int f2 = 1;
            printf(", \"image\": {");
            print_ref(&ref, NULL, NULL, 1, &f2);
            printf("}");
        }
        json_kv_bool(stdout, &f, "sound", rc == KC_OK);
        if (rc) json_kv_str(stdout, &f, "problem", why);
    } else if (rc) {
        printf("  image      unreadable: %s\n", cli_shown(why, buf, sizeof buf));
    } else {
        printf("  image      sound: its bytes are its digests' (XXH3-128 and SHA-256 checked)\n");
        print_ref(&ref, NULL, NULL, 0, NULL);
    }
    users_ctx g = {c, it->key, CLI_GRAPH, json, 1, 0}, u = {c, it->key, CLI_UNIT, json, 1, 0};
    if (json) printf(", \"graphs\": [");
    else printf("  used by\n");
    int wrc = kc_cache_foreach(c, users_visit, &g);
    if (json) printf("], \"units\": [");
    if (!wrc) wrc = kc_cache_foreach(c, users_visit, &u);
    if (json) printf("]");
    print_sections(e, json);
    if (json) printf("}");
    else if (!g.n && !u.n) printf("    nothing: gc removes it once it is an hour old\n");
    if (wrc) return cli_fail("listing failed");
    return rc ? EXIT_PROBLEM : 0;
}

/* A unit record: its image (and whether it is there) and each name expression's lowered name.
 * The names follow the record's reference in its UNIT section (grammar in kcache/entry.h); the
 * record was read strictly by kc_unit_entry_read first, and is read again here with bounds. */
int show_unit(kc_cache *c, const kc_cache_item *it, const kc_entry *e, int json, int first_obj) {
    char buf[SHOWN_CAP], buf2[SHOWN_CAP];
    kc_image_ref ref;
    int rc = kc_unit_entry_read(e, &ref, NULL, 0, NULL);
    char why[1024] = "";
    if (rc) snprintf(why, sizeof why, "%s", kc_error_last()->message);
    print_head(it, e, "unit record", json, first_obj);
    static const char *const states[] = {"present", "missing", "corrupt"};
    const char *state = rc ? NULL : states[cli_image_state_of(c, &ref)];
    int f = 0;
    if (json) {
        json_kv_bool(stdout, &f, "sound", rc == KC_OK);
        if (rc) json_kv_str(stdout, &f, "problem", why);
        else {
            printf(", \"image\": {");
            int f2 = 1;
            print_ref(&ref, state, NULL, 1, &f2);
            printf("}, \"names\": [");
        }
    } else if (rc) {
        printf("  record     unreadable: %s\n", cli_shown(why, buf, sizeof buf));
    } else {
        printf("  image      (what the unit compiled to%s)\n",
               strcmp(state, "present") ? "; without it, the unit is compiled again at its next use" : "");
        print_ref(&ref, state, NULL, 0, NULL);
        printf("  names      (name expression -> lowered name)\n");
    }
    if (!rc) {
        const void *data;
        size_t len;
        kc_entry_section(e, KC_SECTION_UNIT, &data, &len);
        const uint8_t *p = data;
        size_t skip = 16 + 32 + 4 + strlen(ref.target) + 1 + 8, left = len > skip ? len - skip : 0;
        p += len > skip ? skip : len;
        uint32_t count = left >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                                   : 0;
        p += left >= 4 ? 4 : 0, left -= left >= 4 ? 4 : left;
        for (uint32_t i = 0; i < count; i++) {
            char *s[2] = {buf, buf2};
            char raw[2][4097];
            int ok = 1;
            for (int j = 0; j < 2 && ok; j++) {
                uint32_t l = left >= 4
                                 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                                 : 0;
                ok = left >= 4 && l >= 1 && l <= 4096 && l <= left - 4;
                if (!ok) break;
                memcpy(raw[j], p + 4, l);
                raw[j][l] = '\0';
                p += 4 + l, left -= 4 + l;
            }
            if (!ok) break; /* cannot happen: kc_unit_entry_read checked it */
            if (json) {
                int f3 = 1;
                printf("%s{", i ? ", " : "");
                json_kv_str(stdout, &f3, "expr", raw[0]);
                json_kv_str(stdout, &f3, "lowered", raw[1]);
                printf("}");
            } else {
                printf("    %s -> %s\n", cli_shown(raw[0], s[0], SHOWN_CAP), cli_shown(raw[1], s[1], SHOWN_CAP));
            }
        }
        if (json) printf("]");
    }
    if (json) {
        print_digests(e, 1);
        printf("}");
    } else {
        print_digests(e, 0);
    }
    return rc ? EXIT_PROBLEM : 0;
}

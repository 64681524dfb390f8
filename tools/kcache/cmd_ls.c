/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_ls.c — `kcache ls`: one line (or one JSON object) per stored graph entry — key, variant,
 * size, last use, its images and the graph's name (ORIGIN "graph", recorded when the entry was
 * built; "-" for an entry written before) — with --all, images and unit records too, each saying
 * what it is (an image: its kind and target; a unit record: the image it compiled to) — or, with --images, one per image: its id, size, target, kind,
 * and how many graph entries and unit records refer to it (what sharing saves).
 *
 * The one idea: a cache holds three kinds of object ([Note: two levels] in kcache/entry.h), told
 * apart by their names' variants; `ls` lists graphs, the objects a user asked for, and reads
 * each one's IMAGES references (kc_cache_peek: nothing counted or refreshed); `ls --images`
 * walks once, keeping every image found and every reference made, then counts who refers to
 * what.  Images that are referred to but absent are listed too (present: false), so a graph
 * that has become a miss shows why.  Every name goes through cli_shown(), so none reaches the
 * terminal with an escape sequence in it.
 * Only main.c's command table refers to this file; it opens the cache through
 * cli_open_cache() and changes nothing.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_ls(const cli_settings *cs, int argc, char **argv);

static const cli_opt ls_opts[] = {
    {"all", 0, NULL, "list images and unit records too, each with what it is"},
    {"images", 0, NULL, "list the images, with the graph entries and unit records that use each"},
    {"json", 0, NULL, "print one JSON array"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_ls = {"ls",
                            "kcache ls [--all] [--images] [--json]",
                            "List stored graph entries: key, variant, size, last use, the images each refers to\n"
                            "(JSON: their ids) and the graph's name (\"-\" for an entry stored before names were\n"
                            "recorded).  --all lists images and unit records too, each with what it is: an image's\n"
                            "kind and target, a unit record's image (JSON: \"kind\" graph, image or unit).\n"
                            "--images lists the images instead: id, stored size, target, kind (cubin or ptx), and how\n"
                            "many graph entries and unit records refer to each; an image referred to but absent is\n"
                            "listed as missing.",
                            cmd_ls,
                            ls_opts,
                            CLI_OPERANDS_NONE};

typedef struct ls_ctx {
    kc_cache *c;
    int json, first, all;
    uint64_t n;
} ls_ctx;

/* --all: an image or a unit record, with what it is (read from it: nothing counted or refreshed). */
static void ls_other(ls_ctx *l, const kc_cache_item *it, cli_kind kind) {
    char hex[KC_KEY_HEX_LEN + 1], t[32], id[KC_KEY_HEX_LEN + 1] = "", v[4 * 64 + 1], tg[4 * 32 + 1];
    kc_key_to_hex(&it->key, hex);
    cli_iso_time(it->last_used, t, sizeof t);
    kc_entry *e = NULL;
    kc_image_ref ref;
    memset(&ref, 0, sizeof ref);
    int ok = kc_cache_peek(l->c, &it->key, it->variant, &e) == KC_OK &&
             (kind == CLI_IMAGE ? kc_image_entry_read(e, NULL, 0, &ref, NULL, NULL)
                                : kc_unit_entry_read(e, &ref, NULL, 0, NULL)) == KC_OK;
    kc_entry_free(e);
    if (ok && kind == CLI_UNIT) kc_key_to_hex(&ref.id, id);
    const char *ik = ok && kind == CLI_IMAGE ? (ref.is_ptx ? "ptx" : "cubin") : "";
    if (l->json) {
        int first = 1;
        printf("%s\n  {", l->first ? "" : ",");
        json_kv_str(stdout, &first, "key", hex);
        json_kv_str(stdout, &first, "variant", it->variant);
        json_kv_str(stdout, &first, "kind", kind == CLI_IMAGE ? "image" : "unit");
        json_kv_u64(stdout, &first, "bytes", it->bytes);
        json_kv_u64(stdout, &first, "last_used", (uint64_t)it->last_used);
        json_kv_str(stdout, &first, "last_used_iso", t);
        json_kv_bool(stdout, &first, "readable", ok);
        if (ok && kind == CLI_IMAGE) json_kv_str(stdout, &first, "target", ref.target);
        if (ok && kind == CLI_IMAGE) json_kv_str(stdout, &first, "image_kind", ik);
        if (ok && kind == CLI_UNIT) json_kv_str(stdout, &first, "image", id);
        printf("}");
        l->first = 0;
    } else if (!ok) {
        printf("%s  %-12s %10llu  %s  %s, unreadable\n", hex, cli_shown(it->variant, v, sizeof v),
               (unsigned long long)it->bytes, t, kind == CLI_IMAGE ? "image" : "unit record");
    } else if (kind == CLI_IMAGE) {
        printf("%s  %-12s %10llu  %s  image %s %s\n", hex, cli_shown(it->variant, v, sizeof v),
               (unsigned long long)it->bytes, t, ik, cli_shown(ref.target, tg, sizeof tg));
    } else {
        printf("%s  %-12s %10llu  %s  unit record of image %s\n", hex, cli_shown(it->variant, v, sizeof v),
               (unsigned long long)it->bytes, t, id);
    }
}

static int ls_item(const kc_cache_item *it, void *ctx) {
    ls_ctx *l = ctx;
    cli_kind kind = cli_kind_of(it->variant);
    if (kind != CLI_GRAPH) {
        if (l->all) ls_other(l, it, kind);
        return 0;
    }
    char hex[KC_KEY_HEX_LEN + 1], t[32];
    kc_key_to_hex(&it->key, hex);
    cli_iso_time(it->last_used, t, sizeof t);
    kc_entry *e = NULL;
    kc_image_ref *refs = NULL;
    size_t nrefs = 0;
    int irc = kc_cache_peek(l->c, &it->key, it->variant, &e);
    if (irc == KC_OK) irc = kc_entry_images(e, &refs, &nrefs);
    int readable = irc == KC_OK || irc == KC_MISS; /* KC_MISS: no IMAGES section, so no images (a lookup refuses it) */
    char name[KC_ORIGIN_VALUE_MAX + 1] = "";
    if (e && kc_entry_origin(e, "graph", name, sizeof name) != KC_OK) name[0] = '\0'; /* stored before names were */
    if (l->json) {
        int first = 1;
        printf("%s\n  {", l->first ? "" : ",");
        json_kv_str(stdout, &first, "key", hex);
        json_kv_str(stdout, &first, "variant", it->variant);
        if (l->all) json_kv_str(stdout, &first, "kind", "graph");
        json_key(stdout, &first, "name"); /* null: not recorded */
        if (name[0]) json_str(stdout, name);
        else printf("null");
        json_kv_u64(stdout, &first, "bytes", it->bytes);
        json_kv_u64(stdout, &first, "last_used", (uint64_t)it->last_used);
        json_kv_str(stdout, &first, "last_used_iso", t);
        json_key(stdout, &first, "images"); /* null: the entry could not be read (corrupt, an older format) */
        if (!readable) printf("null");
        else {
            printf("[");
            for (size_t i = 0; i < nrefs; i++) {
                char id[KC_KEY_HEX_LEN + 1];
                kc_key_to_hex(&refs[i].id, id);
                printf("%s", i ? ", " : "");
                json_str(stdout, id);
            }
            printf("]");
        }
        printf("}");
        l->first = 0;
    } else {
        char v[4 * 64 + 1], ni[24], nm[4 * 256 + 1];
        if (readable) snprintf(ni, sizeof ni, "%zu image%s", nrefs, nrefs == 1 ? "" : "s");
        else snprintf(ni, sizeof ni, "unreadable");
        printf("%s  %-12s %10llu  %s  %-10s  %s%s\n", hex, cli_shown(it->variant, v, sizeof v),
               (unsigned long long)it->bytes, t, ni, l->all ? "graph " : "",
               name[0] ? cli_shown(name, nm, sizeof nm) : "-");
    }
    free(refs);
    kc_entry_free(e);
    l->n++;
    return 0;
}

/* ---- ls --images ---- */

typedef struct img_row {
    kc_image_ref ref; /* from the image itself when readable, else from a graph's reference to it */
    uint64_t stored_bytes;
    int64_t last_used;
    int state; /* 0 present, 1 missing (only referred to), 2 there but unreadable */
    uint64_t graphs, units;
} img_row;

typedef struct img_ctx {
    kc_cache *c;
    img_row *rows;      /* the images found */
    kc_image_ref *gref; /* every image a graph entry refers to (once per graph) */
    kc_key *uref;       /* every image a unit record refers to */
    size_t n, cap, ng, gcap, nu, ucap;
    int oom;
} img_ctx;

/* Room for one more of `size` bytes in *v (n used of *cap); 0 when out of memory. */
static int grow(void **v, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, nc * size);
    if (!p) return 0;
    *v = p;
    *cap = nc;
    return 1;
}

static img_row *add_row(img_ctx *x) {
    if (!grow((void **)&x->rows, &x->cap, x->n, sizeof *x->rows)) {
        x->oom = 1;
        return NULL;
    }
    img_row *r = &x->rows[x->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static int img_item(const kc_cache_item *it, void *ctx) {
    img_ctx *x = ctx;
    cli_kind kind = cli_kind_of(it->variant);
    kc_entry *e;
    int rc = kc_cache_peek(x->c, &it->key, it->variant, &e);
    if (kind == CLI_IMAGE) {
        img_row *r = add_row(x);
        if (r) {
            r->ref.id = it->key;
            r->stored_bytes = it->bytes;
            r->last_used = it->last_used;
            r->state = rc == KC_OK && kc_image_entry_read(e, NULL, 0, &r->ref, NULL, NULL) == KC_OK ? 0 : 2;
        }
    } else if (rc == KC_OK && kind == CLI_UNIT) {
        kc_image_ref ref;
        if (kc_unit_entry_read(e, &ref, NULL, 0, NULL) == KC_OK) {
            if (!grow((void **)&x->uref, &x->ucap, x->nu, sizeof *x->uref)) x->oom = 1;
            else x->uref[x->nu++] = ref.id;
        }
    } else if (rc == KC_OK) {
        kc_image_ref *refs;
        size_t n;
        if (kc_entry_images(e, &refs, &n) == KC_OK) {
            for (size_t i = 0; i < n && !x->oom; i++) {
                int dup = 0; /* a graph that runs one image twice counts once */
                for (size_t k = 0; k < i && !dup; k++) dup = memcmp(refs[k].id.bytes, refs[i].id.bytes, 16) == 0;
                if (dup) continue;
                if (!grow((void **)&x->gref, &x->gcap, x->ng, sizeof *x->gref)) x->oom = 1;
                else x->gref[x->ng++] = refs[i];
            }
            free(refs);
        }
    }
    kc_entry_free(e);
    return x->oom;
}

/* Every element here begins with a kc_key (img_row, kc_image_ref, kc_key): ordered by it. */
static int key_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(kc_key)); }

/* How many of the n sorted elements (each `size` bytes, a kc_key first) have key k. */
static uint64_t count_of(const void *v, size_t n, size_t size, const kc_key *k) {
    const char *base = v, *p = n ? bsearch(k, v, n, size, key_cmp) : NULL;
    if (!p) return 0;
    const char *lo = p, *hi = p;
    while (lo > base && key_cmp(lo - size, k) == 0) lo -= size;
    while (hi + size < base + n * size && key_cmp(hi + size, k) == 0) hi += size;
    return (uint64_t)((hi - lo) / (ptrdiff_t)size + 1);
}

static void print_row(const img_row *r, int json, int first_row) {
    static const char *const states[] = {"present", "missing", "corrupt"};
    char id[KC_KEY_HEX_LEN + 1], t[32] = "";
    kc_key_to_hex(&r->ref.id, id);
    if (r->state != 1) cli_iso_time(r->last_used, t, sizeof t);
    const char *kind = r->ref.target[0] ? (r->ref.is_ptx ? "ptx" : "cubin") : "";
    if (json) {
        int first = 1;
        printf("%s\n  {", first_row ? "" : ",");
        json_kv_str(stdout, &first, "id", id);
        json_kv_str(stdout, &first, "target", r->ref.target);
        json_kv_str(stdout, &first, "kind", kind);
        json_kv_u64(stdout, &first, "image_bytes", r->ref.len);
        json_kv_u64(stdout, &first, "bytes", r->stored_bytes);
        json_kv_bool(stdout, &first, "present", r->state == 0);
        json_kv_str(stdout, &first, "state", states[r->state]);
        json_kv_u64(stdout, &first, "graphs", r->graphs);
        json_kv_u64(stdout, &first, "units", r->units);
        if (r->state != 1) json_kv_u64(stdout, &first, "last_used", (uint64_t)r->last_used);
        printf("}");
    } else {
        char img[24] = "?", st[24] = "-";
        if (r->ref.len) snprintf(img, sizeof img, "%llu", (unsigned long long)r->ref.len);
        if (r->state != 1) snprintf(st, sizeof st, "%llu", (unsigned long long)r->stored_bytes);
        printf("%s  %-10s %-5s %10s %10s  %3llu graph%s %3llu unit%s  %s\n", id, r->ref.target[0] ? r->ref.target : "?",
               kind[0] ? kind : "?", img, st, (unsigned long long)r->graphs, r->graphs == 1 ? " " : "s",
               (unsigned long long)r->units, r->units == 1 ? " " : "s", r->state == 0 ? t : states[r->state]);
    }
}

static int ls_images(kc_cache *c, int json) {
    img_ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    int rc = kc_cache_foreach(c, img_item, &x);
    if (!json)
        printf("%-32s  %-10s %-5s %10s %10s  %-20s  %s\n", "image", "target", "kind", "bytes", "stored",
               "referred to by", "last use");
    if (x.oom) rc = KC_ENOMEM;
    if (rc == KC_OK) {
        qsort(x.gref, x.ng, sizeof *x.gref, key_cmp);
        qsort(x.uref, x.nu, sizeof *x.uref, key_cmp);
        qsort(x.rows, x.n, sizeof *x.rows, key_cmp);
        /* Images referred to and not found: listed as missing (the graphs that refer to them miss). */
        size_t found = x.n;
        for (size_t i = 0; i < x.ng && !x.oom; i++) {
            if (i && key_cmp(&x.gref[i - 1], &x.gref[i]) == 0) continue;
            if (count_of(x.rows, found, sizeof *x.rows, &x.gref[i].id)) continue;
            img_row *r = add_row(&x);
            if (r) r->ref = x.gref[i], r->state = 1;
        }
        if (x.oom) rc = KC_ENOMEM;
        qsort(x.rows, x.n, sizeof *x.rows, key_cmp);
    }
    if (rc == KC_OK) {
        if (json) printf("[");
        for (size_t i = 0; i < x.n; i++) {
            x.rows[i].graphs = count_of(x.gref, x.ng, sizeof *x.gref, &x.rows[i].ref.id);
            x.rows[i].units = count_of(x.uref, x.nu, sizeof *x.uref, &x.rows[i].ref.id);
            print_row(&x.rows[i], json, i == 0);
        }
        if (json) printf("%s]\n", x.n ? "\n" : "");
    }
    free(x.rows);
    free(x.gref);
    free(x.uref);
    return rc;
}

static int cmd_ls(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_ls, argc, argv, 0, &a);
    cli_opts o = {.json = cli_flag(&a, "json")};
    int images = cli_flag(&a, "images"), all = cli_flag(&a, "all");
    kc_cache *c;
    if (cli_open_cache_readonly(cs, &c)) return EXIT_PROBLEM;
    int rc;
    if (images) {
        rc = ls_images(c, o.json);
    } else {
        ls_ctx l = {c, o.json, 1, all, 0};
        if (o.json) printf("[");
        rc = kc_cache_foreach(c, ls_item, &l);
        if (o.json) printf("%s]\n", l.first ? "" : "\n");
    }
    kc_cache_close(c);
    return rc == KC_OK ? 0 : cli_fail("listing failed");
}

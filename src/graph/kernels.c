/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernels.c — the KERNELS section of a graph entry: its grammar, its writer and its reader,
 * over the entry's IMAGES references ([Note: two levels] in kcache/entry.h).
 *
 * KERNELS section := nkernels:u32 { name:str lowered:str image:u32 }
 *   str := len:u32 bytes[len] (1..4096 bytes, no NUL, when read back)
 *   1 <= nkernels <= KC_GRAPH_MAX_KERNELS; image < the entry's IMAGES count.
 *   Kernels that share a compile unit (compile/units.h) share one image.
 *
 * The images themselves are not in the graph entry: IMAGES refers to each by its digests, and
 * a lookup attaches the bytes it fetched and checked (kc_entry_attach_image, resolve.c).  The
 * reader trusts nothing: every count, length and index is checked, and trailing bytes are an
 * error (KC_ECORRUPT).  Callers: lookup.c writes (kc_kernels_encode), loaded.c reads
 * (kc_kernels_of, with the images attached) to load, and the public kc_entry_kernels /
 * kc_entry_extract serve tools.  Must not: hand the driver an image that did not pass
 * kc_image_entry_read against the graph entry's reference.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "graph_internal.h"

void kc_kernels_encode(kc_buf *k, const kc_graph_desc *d, const kc_units *u, kc_compiled *const *res) {
    kc_buf_put_u32(k, (uint32_t)d->nkernels);
    for (size_t i = 0; i < d->nkernels; i++) {
        kc_buf_put_str(k, d->kernels[i].name);
        kc_buf_put_str(k, res[u->unit_of[i]]->lowered_names[u->slot[i]]);
        kc_buf_put_u32(k, (uint32_t)u->unit_of[i]);
    }
}

int kc_kernels_of(const kc_entry *e, kimg **out, size_t *n, size_t *nimages_out, char **strs) {
    *out = NULL;
    *n = 0;
    *strs = NULL;
    const void *data;
    size_t len;
    int rc = kc_entry_section(e, KC_SECTION_KERNELS, &data, &len);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "entry has no KERNELS section") : rc;
    kc_image_ref *refs;
    size_t nimg;
    rc = kc_entry_images(e, &refs, &nimg);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "entry has no IMAGES section") : rc;
    kc_reader r = kc_reader_make(data, len);
    kimg *v = NULL;
    /* every string, NUL-terminated: the kernels' names and the images' targets */
    char *s = kc_malloc(len + 4 * (size_t)KC_GRAPH_MAX_KERNELS + nimg * (KC_VARIANT_MAX + 1) + 1);
    if (!s) {
        free(refs);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    char *sp = s;
    char *targets[KC_IMAGES_MAX];
    for (size_t i = 0; i < nimg; i++) {
        size_t tl = strlen(refs[i].target);
        memcpy(sp, refs[i].target, tl + 1);
        targets[i] = sp;
        sp += tl + 1;
    }
#define RD_STR(dst)                                                           \
    do {                                                                      \
        uint32_t l_ = kc_rd_next_u32(&r);                                     \
        const uint8_t *b_ = kc_rd_bytes(&r, l_);                              \
        if (r.bad || l_ == 0 || l_ > 4096 || memchr(b_, 0, l_)) goto corrupt; \
        memcpy(sp, b_, l_);                                                   \
        sp[l_] = '\0';                                                        \
        (dst) = sp;                                                           \
        sp += l_ + 1;                                                         \
    } while (0)
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count == 0 || count > KC_GRAPH_MAX_KERNELS) goto corrupt;
    v = kc_calloc(count, sizeof *v);
    if (!v) {
        free(s);
        free(refs);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        RD_STR(v[i].name);
        RD_STR(v[i].lowered);
        uint32_t ix = kc_rd_next_u32(&r);
        if (r.bad || ix >= nimg) goto corrupt;
        const void *img;
        size_t il;
        v[i].image_index = ix;
        v[i].target = targets[ix];
        v[i].is_ptx = refs[ix].is_ptx;
        v[i].len = (size_t)refs[ix].len;
        v[i].image = NULL;
        if (kc_entry_attached_image(e, ix, &img, &il) == KC_OK) {
            if (il != v[i].len) {
                size_t want = v[i].len;
                free(v), free(s), free(refs);
                return kc_err(KC_ECORRUPT, "image %u attached with %zu bytes; the graph entry refers to %zu", ix, il,
                              want);
            }
            v[i].image = img;
        }
    }
#undef RD_STR
    if (r.left) goto corrupt;
    free(refs);
    *out = v;
    *n = count;
    if (nimages_out) *nimages_out = nimg;
    *strs = s;
    return KC_OK;
corrupt:
    free(v); /* a string of a kernel can be what is malformed: v may be half filled */
    free(s);
    free(refs);
    return kc_err(KC_ECORRUPT, "corrupt entry: malformed KERNELS section");
}

int kc_entry_kernels(const kc_entry *e, kc_kernel_visit_cb cb, void *ctx) {
    kimg *v;
    size_t n;
    char *strs;
    int rc = kc_kernels_of(e, &v, &n, NULL, &strs);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) cb(v[i].name, v[i].lowered, v[i].target, v[i].is_ptx, v[i].len, ctx);
    free(v);
    free(strs);
    return KC_OK;
}

/* Make `s` a plain file-name part, in place: every byte outside [A-Za-z0-9_] becomes '_'. */
static void file_part(char *s) {
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) *p = '_';
}

int kc_entry_extract(const kc_entry *e, const char *dir, int *count) {
    if (!e || !dir) return kc_err(KC_EINVAL, "kc_entry_extract: NULL argument");
    kimg *v;
    size_t n;
    char *strs;
    int rc = kc_kernels_of(e, &v, &n, NULL, &strs);
    if (rc) return rc;
    for (size_t i = 0; i < n && !rc; i++)
        if (!v[i].image) rc = kc_err(KC_MISS, "kernel '%s': its image was not fetched (kc_entry_resolve)", v[i].name);
    if (rc || (rc = kc_fs_mkdirs(dir, 0755))) goto out;
    for (size_t i = 0; i < n; i++) {
        /* Every name from the entry that goes into the path is made a plain file-name part
         * ([A-Za-z0-9_], nothing else): an imported entry's symbol or target ("d/../../x")
         * must not lead the write out of `dir`. */
        char path[PATH_MAX], base[200], target[64];
        snprintf(base, sizeof base, "%s", v[i].lowered);
        snprintf(target, sizeof target, "%s", v[i].target);
        file_part(base);
        file_part(target);
        snprintf(path, sizeof path, "%s/%s.%s.%s", dir, base, target, v[i].is_ptx ? "ptx" : "cubin");
        if ((rc = kc_fs_write_atomic(path, v[i].image, v[i].len - (v[i].is_ptx ? 1 : 0)))) goto out;
    }
    if (count) *count = (int)n;
out:
    free(v);
    free(strs);
    return rc;
}

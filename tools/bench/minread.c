/* SPDX-License-Identifier: Apache-2.0 */
/*
 * minread.c — kcache-minread: the least a fresh process must do to use a warm cache's entries,
 * the reference a fresh process's warm start (kcache-warmstart) is set against.
 *
 *   kcache-minread LIST     (LIST: one entry file's path a line, as kcache-bench writes it)
 *
 * Linked to libzstd and libxxhash only.  For every file of LIST, one after another: open, one
 * read() of the whole file, close; then the entry's checks as the library's decoder makes them
 * (format v4, kcache/entry.h): magic, version, header size and total length; the header
 * checksum (XXH3-64 over header bytes [0, 88) and the section table) compared with the stored
 * one; per section, the XXH3-64 of its stored bytes compared with the table's, and a zstd
 * section decompressed into a buffer (its raw length checked); and for an image (an IMAGE
 * section: its reference, then its bytes), the XXH3-128 of the image's bytes compared with the
 * key it is stored under (an image's name is that digest).  Exit 0 when every file passed, 1 (naming the first that did not)
 * otherwise, 2 on usage.
 *
 * Must not: be mistaken for a cache.  It does not read the manifest, the graph specs or their
 * sources, compute any key, find a file by key, parse any section (graph launch programs,
 * parameter tables, image references), check a MAC or signature or an image's SHA-256, keep
 * anything it decoded, refresh LRU times, or count statistics: kcache-warmstart does all of
 * those.  It decompresses every compressed section, which a compile-only hit may not.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

enum { HDR = 96, DESC = 40, SUM_AT = 88, SECTION_IMAGE = 9, CODEC_ZSTD = 1 };

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The checks of one entry of n bytes (above); NULL, or what failed. */
static const char *check_entry(const uint8_t *e, size_t n, uint8_t **out, size_t *outcap, ZSTD_DCtx *z,
                               XXH3_state_t *st) {
    static const uint8_t magic[8] = {0x89, 'K', 'C', 'E', '\r', '\n', 0x1a, '\n'};
    if (n < HDR || memcmp(e, magic, 8)) return "no entry header";
    uint16_t version, hsize;
    memcpy(&version, e + 8, 2);
    memcpy(&hsize, e + 10, 2);
    uint64_t total = rd64(e + 64);
    uint32_t nsec = rd32(e + 72);
    if (version != 4 || hsize != HDR) return "not format v4";
    if (total != n || nsec < 1 || nsec > 16 || (uint64_t)HDR + (uint64_t)DESC * nsec > total) return "bad lengths";
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, e, SUM_AT);
    XXH3_64bits_update(st, e + HDR, (size_t)DESC * nsec);
    if (XXH3_64bits_digest(st) != rd64(e + SUM_AT)) return "header checksum";
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = e + HDR + (size_t)DESC * i;
        uint32_t type = rd32(d), codec = rd32(d + 4);
        uint64_t raw = rd64(d + 8), stored = rd64(d + 16), off = rd64(d + 24);
        if (off > total || stored > total - off) return "section out of bounds";
        if (XXH3_64bits(e + off, (size_t)stored) != rd64(d + 32)) return "section checksum";
        const uint8_t *plain = e + off;
        size_t plain_len = (size_t)stored;
        if (codec == CODEC_ZSTD) {
            if (raw > ((uint64_t)256 << 20)) return "section too large";
            if (raw > *outcap) {
                uint8_t *b = realloc(*out, (size_t)raw);
                if (!b) return "no memory";
                *out = b, *outcap = (size_t)raw;
            }
            size_t got = ZSTD_decompressDCtx(z, *out, *outcap, e + off, (size_t)stored);
            if (ZSTD_isError(got) || got != raw) return "zstd";
            plain = *out, plain_len = got;
        } else if (codec != 0 || raw != stored) {
            return "bad codec";
        }
        if (type == SECTION_IMAGE) { /* ref (id[16] sha256[32] target:str is_ptx:u8 len:u64) then the image's bytes */
            if (plain_len < 16 + 32 + 4) return "image reference";
            uint32_t tl = rd32(plain + 48);
            size_t at = 16 + 32 + 4 + (size_t)tl + 1 + 8;
            if (tl < 1 || tl > 31 || at > plain_len || rd64(plain + at - 8) != plain_len - at) return "image reference";
            XXH128_canonical_t c;
            XXH128_canonicalFromHash(&c, XXH3_128bits(plain + at, plain_len - at));
            if (memcmp(c.digest, e + 16, 16)) return "image digest";
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: kcache-minread LIST\n");
        return 2;
    }
    FILE *lf = fopen(argv[1], "r");
    if (!lf) {
        perror(argv[1]);
        return 2;
    }
    ZSTD_DCtx *z = ZSTD_createDCtx();
    XXH3_state_t *st = XXH3_createState();
    uint8_t *buf = NULL, *out = NULL;
    size_t cap = 0, outcap = 0, files = 0;
    char path[4096];
    int rc = z && st ? 0 : 1;
    while (!rc && fgets(path, sizeof path, lf)) {
        path[strcspn(path, "\n")] = 0;
        if (!path[0]) continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size <= 0) {
            fprintf(stderr, "kcache-minread: %s: cannot open\n", path);
            if (fd >= 0) close(fd);
            rc = 1;
            break;
        }
        if ((size_t)sb.st_size > cap) {
            uint8_t *b = realloc(buf, (size_t)sb.st_size);
            if (!b) {
                close(fd);
                rc = 1;
                break;
            }
            buf = b, cap = (size_t)sb.st_size;
        }
        ssize_t n = read(fd, buf, (size_t)sb.st_size);
        close(fd);
        const char *why = n != sb.st_size ? "short read" : check_entry(buf, (size_t)n, &out, &outcap, z, st);
        if (why) {
            fprintf(stderr, "kcache-minread: %s: %s\n", path, why);
            rc = 1;
            break;
        }
        files++;
    }
    fclose(lf);
    if (!rc) printf("%zu entry files read and checked\n", files);
    free(buf);
    free(out);
    XXH3_freeState(st);
    ZSTD_freeDCtx(z);
    return rc;
}

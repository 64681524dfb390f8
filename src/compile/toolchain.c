/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolchain.c — which NVRTC this host has, and its identity, found without loading it.
 *
 * The one idea: an NVRTC build is identified by its file, not by loading it.  The file is
 * found by hand, by the search the loader would make (KCACHE_NVRTC, else the names NVRTC goes
 * by in LD_LIBRARY_PATH, the toolkit kcache was built with, /etc/ld.so.cache and the standard
 * folders: [Note: finding NVRTC]); its identity is the GNU build-id note of its ELF, read with
 * a few bounds-checked preads (a 109 MB library: a few hundred bytes read), or, for a file
 * without one, XXH3-128 of all its bytes.  So two installs of one build, under any path or
 * file name, have one identity, two builds of one version never do, and a hit never pays for
 * dlopen.  When NVRTC is really needed (a miss), nvrtc.c dlopens exactly the file identified
 * here, so the key and the compiler cannot disagree.
 *
 * Callers: compile/nvrtc.c (the file to dlopen), the cache part (which identity keys use:
 * cache/toolchain_choice.c), the CLI (`kcache toolchain`), tests.
 * Must not: dlopen anything; trust the file (it is untrusted input: every offset and length
 * is checked against the file's size before it is read); read more of it than the headers
 * and notes unless it has no build-id; touch the cache (compile knows nothing of it).
 */
#include "kcache/compile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/internal.h"
#include "../config/config.h"

#ifndef KC_CUDA_LIBDIR
#define KC_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

#if defined(__x86_64__)
#define KC_ELF_MACHINE EM_X86_64
#define KC_MULTIARCH "x86_64-linux-gnu"
#define KC_LDCACHE_ARCH 0x0300 /* FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define KC_ELF_MACHINE EM_AARCH64
#define KC_MULTIARCH "aarch64-linux-gnu"
#define KC_LDCACHE_ARCH 0x0a00 /* FLAG_AARCH64_LIB64 */
#else
#define KC_ELF_MACHINE 0 /* not checked */
#define KC_MULTIARCH ""
#define KC_LDCACHE_ARCH -1 /* /etc/ld.so.cache not read */
#endif

#define BUILD_ID_PREFIX "build-id:"
#define HASH_PREFIX "xxh3-128:"
#define MAX_BUILD_ID 64     /* bytes; GNU ld writes 16 (md5, uuid) or 20 (sha1) */
#define MAX_PHNUM 4096      /* program headers read */
#define MAX_NOTE_BYTES 8192 /* read of one note segment or section */
#define LDCACHE_MAX (16u << 20)

/*
 * [Note: finding NVRTC]
 * KCACHE_NVRTC, when set and not empty, names the library: a path (with a '/') is taken as
 * is, a bare file name is searched for as below; if it is not there, this host has no NVRTC
 * — kcache does not fall back to another one.  Otherwise each of the names NVRTC's library
 * goes by (libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so) is looked for, in turn, in: the
 * folders of LD_LIBRARY_PATH (empty entries and entries with '$' skipped), the toolkit's
 * library folder kcache was built with (KC_CUDA_LIBDIR) and /usr/local/cuda/lib64, the
 * entry /etc/ld.so.cache has for the name (the new-format cache, this machine's ABI, no
 * hwcaps subfolders), then /lib/<multiarch>, /usr/lib/<multiarch>, /lib64, /usr/lib64, /lib,
 * /usr/lib.  The first regular file found is the one: identified here, dlopened by path.
 * That is the order the loader would take for a name, with the toolkit's folder moved before
 * ld.so.cache; as the file found is the file loaded, the order decides which NVRTC a host
 * uses, never whether a key is right.
 */
static const char *const nv_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int join(char *out, size_t cap, const char *dir, size_t dlen, const char *name) {
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
    int n = snprintf(out, cap, "%.*s/%s", (int)dlen, dir, name);
    return n > 0 && (size_t)n < cap;
}

/* ---- /etc/ld.so.cache, the new format (glibc >= 2.32 writes only it; older ones embed it) ----
 *   header  "glibc-ld.so.cache" "1.1" nlibs:u32 len_strings:u32 flags:u8 pad[3]
 *           extension_offset:u32 unused[3]:u32                       (48 bytes)
 *   entry   flags:i32 key:u32 value:u32 osversion:u32 hwcap:u64      (24 bytes, nlibs of them)
 * key and value are offsets of NUL-terminated strings from the header's start.  An old-format
 * file ("ld.so-1.7.0", nlibs:u32, 12-byte entries) may come first; the new one follows it,
 * 8-byte aligned. */
static struct {
    pthread_once_t once;
    char path[KC_ARRAY_LEN(nv_names)][PATH_MAX];
} ldc = {.once = PTHREAD_ONCE_INIT};

static void ldcache_read(void) {
    if (KC_LDCACHE_ARCH < 0) return;
    int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return;
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 48 || (uint64_t)st.st_size > LDCACHE_MAX ||
        !(buf = malloc((size_t)st.st_size)) || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
        free(buf);
        close(fd);
        return;
    }
    close(fd);
    size_t size = (size_t)st.st_size, base = 0;
    if (memcmp(buf, "ld.so-1.7.0", 11) == 0) { /* the old format first: skip it */
        uint32_t n;
        memcpy(&n, buf + 12, 4);
        base = 16 + (size_t)n * 12;
        base = (base + 7) & ~(size_t)7;
    }
    if (base > size || size - base < 48 || memcmp(buf + base, "glibc-ld.so.cache1.1", 20) != 0) goto out;
    uint32_t nlibs;
    memcpy(&nlibs, buf + base + 20, 4);
    if (nlibs > (size - base - 48) / 24) goto out;
    for (uint32_t i = 0; i < nlibs; i++) {
        const unsigned char *e = buf + base + 48 + (size_t)i * 24;
        int32_t flags;
        uint32_t key, value;
        uint64_t hwcap;
        memcpy(&flags, e, 4);
        memcpy(&key, e + 4, 4);
        memcpy(&value, e + 8, 4);
        memcpy(&hwcap, e + 16, 8);
        if ((flags & 0xff) != 0x03 /* FLAG_ELF_LIBC6 */ || (flags & 0xff00) != KC_LDCACHE_ARCH || hwcap) continue;
        if (key >= size - base || value >= size - base) continue;
        const char *k = (const char *)buf + base + key, *v = (const char *)buf + base + value;
        if (!memchr(k, 0, size - base - key) || !memchr(v, 0, size - base - value)) continue;
        for (size_t n = 0; n < KC_ARRAY_LEN(nv_names); n++)
            if (!ldc.path[n][0] && strcmp(k, nv_names[n]) == 0 && strlen(v) < PATH_MAX)
                snprintf(ldc.path[n], PATH_MAX, "%s", v);
    }
out:
    free(buf);
}

/* The file called `name` in the search's folders (for KCACHE_NVRTC's bare name, ldc_index -1). */
static int search(const char *name, int ldc_index, char *out, size_t cap) {
    const char *lp = kc_config_process()->v.ld_library_path;
    for (const char *p = lp; p && *p;) {
        size_t n = strcspn(p, ":;");
        if (n && !memchr(p, '$', n) && join(out, cap, p, n, name) && is_file(out)) return 1;
        p += n + (p[n] != '\0');
    }
    const char *first[] = {KC_CUDA_LIBDIR, "/usr/local/cuda/lib64"};
    for (size_t i = 0; i < KC_ARRAY_LEN(first); i++)
        if (join(out, cap, first[i], strlen(first[i]), name) && is_file(out)) return 1;
    if (ldc_index >= 0) {
        pthread_once(&ldc.once, ldcache_read);
        if (ldc.path[ldc_index][0] && is_file(ldc.path[ldc_index]) && strlen(ldc.path[ldc_index]) < cap) {
            snprintf(out, cap, "%s", ldc.path[ldc_index]);
            return 1;
        }
    }
    const char *std_dirs[] = {
        "/lib/" KC_MULTIARCH, "/usr/lib/" KC_MULTIARCH, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
    for (size_t i = 0; i < KC_ARRAY_LEN(std_dirs); i++)
        if (join(out, cap, std_dirs[i], strlen(std_dirs[i]), name) && is_file(out)) return 1;
    return 0;
}

static struct {
    pthread_once_t once;
    int rc;
    char path[PATH_MAX];
    char why[PATH_MAX + 200];
} loc = {.once = PTHREAD_ONCE_INIT};

static void locate_once(void) {
    const char *env = kc_config_process()->v.nvrtc;
    if (env && *env) {
        if (strchr(env, '/')) {
            if (is_file(env) && strlen(env) < sizeof loc.path) snprintf(loc.path, sizeof loc.path, "%s", env);
        } else {
            search(env, -1, loc.path, sizeof loc.path);
        }
        if (!loc.path[0]) {
            loc.rc = KC_ENONVRTC;
            snprintf(loc.why, sizeof loc.why,
                     "KCACHE_NVRTC='%.*s' names no file (kcache looks nowhere else when it is set)", PATH_MAX, env);
        }
        return;
    }
    for (size_t i = 0; i < KC_ARRAY_LEN(nv_names); i++)
        if (search(nv_names[i], (int)i, loc.path, sizeof loc.path)) return;
    loc.path[0] = '\0';
    loc.rc = KC_ENONVRTC;
    snprintf(loc.why, sizeof loc.why,
             "no libnvrtc.so.13, .so.12 or .so in LD_LIBRARY_PATH, %s, /usr/local/cuda/lib64, /etc/ld.so.cache "
             "or the standard library folders (set KCACHE_NVRTC to NVRTC's library)",
             KC_CUDA_LIBDIR);
}

int kc_toolchain_locate(char *out, size_t cap) {
    if (!out || cap == 0) return kc_err(KC_EINVAL, "kc_toolchain_locate: NULL argument");
    out[0] = '\0';
    pthread_once(&loc.once, locate_once);
    if (loc.rc) return kc_err(loc.rc, "no NVRTC on this host: %s", loc.why);
    if (strlen(loc.path) >= cap) return kc_err(KC_EINVAL, "NVRTC's path '%s' does not fit in %zu bytes", loc.path, cap);
    snprintf(out, cap, "%s", loc.path);
    return KC_OK;
}

/* ---- the ELF's GNU build-id note ---- */

#define BAD(...) kc_err(KC_ECORRUPT, __VA_ARGS__)

static int pread_all(int fd, void *p, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Whether [off, off+len) lies within a file of `size` bytes (no overflow). */
static int within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/*
 * Look through the notes at [off, off+len) for NT_GNU_BUILD_ID owned by "GNU": 1 and the bytes
 * in id/idlen when found, 0 when not, KC_ECORRUPT (message set) when a note is malformed.
 * Notes are 4-byte aligned, or 8 where the segment/section says so (.note.gnu.property).
 */
static int find_note(int fd, const char *path, uint64_t off, uint64_t len, uint64_t align, uint64_t fsize,
                     unsigned char *id, size_t *idlen) {
    if (!within(off, len, fsize)) return BAD("'%s': a note lies outside the file (truncated or malformed ELF)", path);
    if (len > MAX_NOTE_BYTES) len = MAX_NOTE_BYTES; /* the build-id note comes first; a bigger one is not read whole */
    unsigned char buf[MAX_NOTE_BYTES];
    if (pread_all(fd, buf, (size_t)len, off)) return kc_err_errno(errno ? errno : EIO, "reading '%s'", path);
    size_t a = align == 8 ? 8 : 4, p = 0;
    while (len - p >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, buf + p, 4);
        memcpy(&descsz, buf + p + 4, 4);
        memcpy(&type, buf + p + 8, 4);
        size_t nsz = ((size_t)namesz + a - 1) & ~(a - 1), dsz = ((size_t)descsz + a - 1) & ~(a - 1);
        if (namesz > len || descsz > len || nsz > len - p - 12 || dsz > len - p - 12 - nsz) {
            if (len == MAX_NOTE_BYTES) return 0; /* cut by our limit, not by the file */
            return BAD("'%s': a note's sizes run past its segment (malformed ELF)", path);
        }
        const unsigned char *name = buf + p + 12, *desc = name + nsz;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            if (descsz == 0 || descsz > MAX_BUILD_ID)
                return BAD("'%s': its build-id note has %u bytes (malformed ELF)", path, descsz);
            memcpy(id, desc, descsz);
            *idlen = descsz;
            return 1;
        }
        p += 12 + nsz + dsz;
    }
    return 0;
}

/* The build-id from the program headers' PT_NOTEs, else from the SHT_NOTE sections. */
static int read_build_id(int fd, const char *path, uint64_t fsize, unsigned char *id, size_t *idlen) {
    Elf64_Ehdr eh;
    if (fsize < sizeof eh)
        return BAD("'%s' is not an ELF file: %llu bytes (truncated?)", path, (unsigned long long)fsize);
    if (pread_all(fd, &eh, sizeof eh, 0)) return kc_err_errno(errno ? errno : EIO, "reading '%s'", path);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return BAD("'%s' is not an ELF file (bad magic)", path);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const int data = ELFDATA2LSB;
#else
    const int data = ELFDATA2MSB;
#endif
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != data)
        return BAD("'%s' is not a 64-bit ELF of this machine's byte order", path);
    if (eh.e_type != ET_DYN) return BAD("'%s' is not a shared library (ELF type %u)", path, eh.e_type);
    if (KC_ELF_MACHINE && eh.e_machine != KC_ELF_MACHINE)
        return BAD("'%s' is a library for another machine (ELF machine %u)", path, eh.e_machine);
    if (eh.e_phnum) {
        if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > MAX_PHNUM ||
            !within(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), fsize))
            return BAD("'%s': its program headers lie outside the file (truncated or malformed ELF)", path);
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread_all(fd, &ph, sizeof ph, eh.e_phoff + (uint64_t)i * sizeof ph))
                return kc_err_errno(errno ? errno : EIO, "reading '%s'", path);
            if (ph.p_type != PT_NOTE) continue;
            int rc = find_note(fd, path, ph.p_offset, ph.p_filesz, ph.p_align, fsize, id, idlen);
            if (rc) return rc;
        }
    }
    if (eh.e_shnum && eh.e_shoff) {
        if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
            !within(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), fsize))
            return BAD("'%s': its section headers lie outside the file (truncated or malformed ELF)", path);
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh;
            if (pread_all(fd, &sh, sizeof sh, eh.e_shoff + (uint64_t)i * sizeof sh))
                return kc_err_errno(errno ? errno : EIO, "reading '%s'", path);
            if (sh.sh_type != SHT_NOTE) continue;
            int rc = find_note(fd, path, sh.sh_offset, sh.sh_size, sh.sh_addralign, fsize, id, idlen);
            if (rc) return rc;
        }
    }
    return 0;
}

/* ---- the content hash of a file without a build-id, memoised per process ---- */

typedef struct hash_memo {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
    char hex[33];
} hash_memo;
static hash_memo hmemo[8];
static size_t hmemo_n;
static pthread_mutex_t hmemo_mu = PTHREAD_MUTEX_INITIALIZER;

static int same_file(const hash_memo *m, const kc_toolchain *t) {
    return m->dev == t->dev && m->ino == t->ino && m->size == t->size && m->mtime_ns == t->mtime_ns &&
           m->ctime_ns == t->ctime_ns;
}

static int content_hash(int fd, const char *path, const kc_toolchain *t, char hex[33]) {
    pthread_mutex_lock(&hmemo_mu);
    for (size_t i = 0; i < hmemo_n; i++)
        if (same_file(&hmemo[i], t)) {
            memcpy(hex, hmemo[i].hex, 33);
            pthread_mutex_unlock(&hmemo_mu);
            return KC_OK;
        }
    pthread_mutex_unlock(&hmemo_mu);
    XXH3_state_t *s = XXH3_createState();
    size_t cap = 1u << 20;
    unsigned char *buf = kc_malloc(cap);
    if (!s || !buf || XXH3_128bits_reset(s) != XXH_OK) {
        XXH3_freeState(s);
        free(buf);
        return kc_err(KC_ENOMEM, "hashing '%s': out of memory", path);
    }
    for (uint64_t off = 0; off < t->size;) {
        size_t n = t->size - off < cap ? (size_t)(t->size - off) : cap;
        if (pread_all(fd, buf, n, off)) {
            XXH3_freeState(s);
            free(buf);
            return kc_err_errno(errno ? errno : EIO, "reading '%s' (changed while hashed?)", path);
        }
        XXH3_128bits_update(s, buf, n);
        off += n;
    }
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    free(buf);
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
    pthread_mutex_lock(&hmemo_mu);
    hash_memo *m = &hmemo[hmemo_n < KC_ARRAY_LEN(hmemo) ? hmemo_n++ : 0];
    *m = (hash_memo){t->dev, t->ino, t->size, t->mtime_ns, t->ctime_ns, ""};
    memcpy(m->hex, hex, 33);
    pthread_mutex_unlock(&hmemo_mu);
    return KC_OK;
}

/* The version a library's file name carries after ".so." ("libnvrtc.so.13.0.88" → "13.0.88"). */
static void version_of(const char *path, char *out, size_t cap) {
    out[0] = '\0';
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *so = NULL;
    for (const char *p = strstr(base, ".so."); p; p = strstr(p + 1, ".so.")) so = p;
    if (!so) return;
    so += 4;
    size_t n = strspn(so, "0123456789.");
    if (n && so[n] == '\0' && n < cap) snprintf(out, cap, "%s", so);
}

int kc_toolchain_identify(const char *path, kc_toolchain *out) {
    if (!path || !*path || !out) return kc_err(KC_EINVAL, "kc_toolchain_identify: NULL argument");
    memset(out, 0, sizeof *out);
    if (strlen(path) >= sizeof out->path) return kc_err(KC_EINVAL, "path '%.64s…' is too long", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us */
    if (fd < 0) return kc_err_errno(errno, "opening NVRTC's library '%s'", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kc_err_errno(e, "stat of '%s'", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return kc_err(KC_ECORRUPT, "'%s' is not a regular file", path);
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    version_of(path, out->version, sizeof out->version);
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
    out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    out->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
    unsigned char id[MAX_BUILD_ID];
    size_t idlen = 0;
    int rc = read_build_id(fd, path, out->size, id, &idlen);
    if (rc == 1) {
        char *p = out->id + snprintf(out->id, sizeof out->id, BUILD_ID_PREFIX);
        for (size_t i = 0; i < idlen; i++) p += snprintf(p, 3, "%02x", id[i]);
        rc = KC_OK;
    } else if (rc == 0) { /* an ELF without a build-id: its bytes are its identity */
        char hex[33];
        rc = content_hash(fd, path, out, hex);
        if (!rc) snprintf(out->id, sizeof out->id, HASH_PREFIX "%s", hex);
    }
    close(fd);
    if (rc) memset(out, 0, sizeof *out);
    return rc;
}

static struct {
    pthread_once_t once;
    int rc;
    kc_toolchain t;
    char why[1024];
} local = {.once = PTHREAD_ONCE_INIT};

static void local_once(void) {
    char path[PATH_MAX];
    if ((local.rc = kc_toolchain_locate(path, sizeof path)) == KC_OK &&
        (local.rc = kc_toolchain_identify(path, &local.t)) == KC_OK) {
        kc_log(KC_LOG_COMPILE, "toolchain: %s (%s)", local.t.id, local.t.path);
        return;
    }
    snprintf(local.why, sizeof local.why, "%s", kc_error_last()->message);
    local.rc = KC_ENONVRTC; /* a file that is no NVRTC library is no NVRTC */
}

int kc_toolchain_local(kc_toolchain *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_toolchain_local: NULL argument");
    pthread_once(&local.once, local_once);
    if (local.rc) {
        memset(out, 0, sizeof *out);
        return kc_err(local.rc, "%s", local.why);
    }
    *out = local.t;
    return KC_OK;
}

static int id_ok(const char *id) {
    size_t b = strlen(BUILD_ID_PREFIX), h = strlen(HASH_PREFIX), hex;
    if (strncmp(id, BUILD_ID_PREFIX, b) == 0) {
        hex = strspn(id + b, "0123456789abcdef");
        return hex >= 2 && hex % 2 == 0 && hex <= 2 * MAX_BUILD_ID && id[b + hex] == '\0';
    }
    if (strncmp(id, HASH_PREFIX, h) == 0) {
        hex = strspn(id + h, "0123456789abcdef");
        return hex == 32 && id[h + hex] == '\0';
    }
    return 0;
}

int kc_toolchain_id_check(const char *id) {
    if (!id) return kc_err(KC_EINVAL, "kc_toolchain_id_check: NULL argument");
    if (id_ok(id)) return KC_OK;
    return kc_err(KC_EINVAL,
                  "'%.200s' is not a toolchain identity (build-id:<lowercase hex> or xxh3-128:<32 lowercase hex>, "
                  "as `kcache toolchain` prints it)",
                  id);
}

int kc_toolchain_meta(const kc_toolchain *t, char *out, size_t cap) {
    if (!t || !out || cap == 0) return kc_err(KC_EINVAL, "kc_toolchain_meta: NULL argument");
    /* "nvrtc <id> (<path>)", the path cut from the left to fit (an entry's META holds 255 bytes). */
    size_t plen = strlen(t->path), room = cap > strlen(t->id) + 11 ? cap - strlen(t->id) - 11 : 0;
    if (!t->id[0] || room < 8)
        return kc_err(KC_EINVAL, "kc_toolchain_meta: no identity, or %zu bytes is too small", cap);
    const char *p = plen <= room ? t->path : t->path + plen - (room - 3);
    snprintf(out, cap, "nvrtc %s (%s%s)", t->id, plen <= room ? "" : "...", p);
    return KC_OK;
}

int kc_toolchain_id_of_meta(const char *meta, char out[KC_TOOLCHAIN_ID_MAX]) {
    if (!meta || !out) return kc_err(KC_EINVAL, "kc_toolchain_id_of_meta: NULL argument");
    out[0] = '\0';
    if (strncmp(meta, "nvrtc ", 6) != 0) return KC_MISS;
    size_t n = strcspn(meta + 6, " ");
    if (n == 0 || n >= KC_TOOLCHAIN_ID_MAX) return KC_MISS;
    memcpy(out, meta + 6, n);
    out[n] = '\0';
    if (!id_ok(out)) {
        out[0] = '\0';
        return KC_MISS;
    }
    return KC_OK;
}

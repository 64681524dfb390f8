/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_toolchain.c — the toolchain's identity without loading it (compile/toolchain.c) and
 * which identity a cache's keys use (cache/toolchain_choice.c):
 *  - the build-id read from this host's libnvrtc is the one binutils' readelf (or file) reads;
 *  - a byte-identical copy under another name and folder (KCACHE_NVRTC) gives the same key,
 *    another build-id another key;
 *  - ELFs built here: the build-id in a PT_NOTE, only in a section, after other notes, with
 *    8-byte note alignment; none at all → XXH3-128 of the bytes; the version a name carries;
 *  - truncated, corrupt and hostile files are a clear KC_ECORRUPT, never a crash (a thousand
 *    random mutations included);
 *  - the choice: KCACHE_TOOLCHAIN, the record's pin, the local NVRTC through the record's
 *    memo (trusted only while the file's stat is unchanged), the one recorded toolchain on a
 *    host without NVRTC, and a refusal naming them when several are recorded; a miss may
 *    compile only with the toolchain the key names.
 * What depends on the process's one search for NVRTC runs in a forked child.  Needs this
 * host's NVRTC for the parts that say so (they skip without it), not a GPU.
 */
#include "helpers.h"

#include <elf.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "cache/record.h"
#include "common/internal.h"
#include "kcache.h"

static char *tmp;

static int setup(void **state) {
    (void)state;
    unsetenv("KCACHE_NVRTC");
    unsetenv("KCACHE_TOOLCHAIN");
    tmp = kct_tmpdir("toolchain");
    return tmp ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(tmp);
    free(tmp);
    return 0;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* This host's NVRTC, or skip. */
static void local_or_skip(kc_toolchain *t) {
    if (kc_toolchain_local(t) != KC_OK) {
        print_message("no NVRTC here (%s): skipped\n", kc_error_last()->message);
        skip();
    }
}

static void copy_file(const char *from, const char *to) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cp --reflink=auto '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

/* ---- a child process: its one search for NVRTC, its own environment ----
 * A fresh process (this program again, exec'ed: a fork would inherit the parent's memos),
 * running one of the functions below and printing its answer. */

typedef void (*child_fn)(const char *arg, char *out, size_t cap);

/* Run the child function `fn` in a fresh process with KCACHE_NVRTC / KCACHE_TOOLCHAIN set
 * (NULL: unset); its answer in out. */
static void in_child_(const char *nvrtc, const char *pin, const char *fn, const char *arg, char *out, size_t cap) {
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        if (nvrtc) setenv("KCACHE_NVRTC", nvrtc, 1);
        else unsetenv("KCACHE_NVRTC");
        if (pin) setenv("KCACHE_TOOLCHAIN", pin, 1);
        else unsetenv("KCACHE_TOOLCHAIN");
        execl("/proc/self/exe", "test_toolchain", "--child", fn, arg ? arg : "", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
    out[n] = '\0';
    close(fd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
#define in_child(nvrtc, pin, fn, arg, out, cap) in_child_(nvrtc, pin, #fn, arg, out, cap)

/* The key of kernels/softmax.json, or "ERR <code>: <message>". */
static void key_of_spec(const char *arg, char *out, size_t cap) {
    (void)arg;
    kc_graph_desc *d = NULL;
    kc_key k;
    int rc = kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json");
    if (!rc) rc = kc_graph_key(d, &k, NULL);
    kc_graph_desc_free(d);
    if (rc) {
        snprintf(out, cap, "ERR %d: %s", rc, kc_error_last()->message);
    } else {
        char hex[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&k, hex);
        snprintf(out, cap, "%s", hex);
    }
}

/* kc_cache_toolchain for the cache at arg: "<from> <id>" or "ERR <code>: <message>". */
static void choice_of(const char *arg, char *out, size_t cap) {
    kc_cache *c = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = arg;
    kc_toolchain_choice ch;
    int rc = arg ? kc_cache_open(&c, &o) : KC_OK;
    if (!rc) rc = kc_cache_toolchain(c, &ch);
    if (rc) snprintf(out, cap, "ERR %d: %s", rc, kc_error_last()->message);
    else snprintf(out, cap, "%d %s", (int)ch.from, ch.id);
    kc_cache_close(c);
}

/* May a miss compile for the choice in cache arg?  "OK" or "ERR <code>: <message>". */
static void can_compile(const char *arg, char *out, size_t cap) {
    kc_cache *c = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = arg;
    kc_toolchain_choice ch;
    int rc = kc_cache_open(&c, &o);
    if (!rc) rc = kc_cache_toolchain(c, &ch);
    if (!rc) rc = kc_cache_toolchain_can_compile_(&ch);
    if (rc) snprintf(out, cap, "ERR %d: %s", rc, kc_error_last()->message);
    else snprintf(out, cap, "OK");
    kc_cache_close(c);
}

/* ---- ELF files made here ---- */

#if defined(__x86_64__)
#define MACHINE EM_X86_64
#elif defined(__aarch64__)
#define MACHINE EM_AARCH64
#else
#define MACHINE EM_NONE
#endif

enum { IN_PHDR = 1, IN_SECTION = 2, OTHER_NOTE_FIRST = 4, ALIGN8 = 8, NO_BUILD_ID = 16 };

/* A small ET_DYN ELF (640 bytes) with a note segment/section at 128. */
static size_t make_elf(unsigned char *b, unsigned how, const unsigned char *id, uint32_t idlen) {
    memset(b, 0, 640);
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = MACHINE;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    size_t a = how & ALIGN8 ? 8 : 4, p = 128;
    if (how & OTHER_NOTE_FIRST) { /* an ABI tag note: namesz 4 "GNU", descsz 16, type 1 */
        uint32_t h[3] = {4, 16, NT_GNU_ABI_TAG};
        memcpy(b + p, h, 12);
        memcpy(b + p + 12, "GNU", 4);
        p += 12 + ((4 + a - 1) & ~(a - 1)) + 16;
    }
    if (!(how & NO_BUILD_ID)) {
        uint32_t h[3] = {4, idlen, NT_GNU_BUILD_ID};
        memcpy(b + p, h, 12);
        memcpy(b + p + 12, "GNU", 4);
        size_t nsz = (4 + a - 1) & ~(a - 1);
        memcpy(b + p + 12 + nsz, id, idlen);
        p += 12 + nsz + ((idlen + a - 1) & ~(a - 1));
    }
    size_t notes = p - 128;
    if (how & IN_PHDR) {
        Elf64_Phdr ph = {0};
        ph.p_type = PT_NOTE;
        ph.p_offset = 128;
        ph.p_filesz = ph.p_memsz = notes;
        ph.p_align = a;
        eh.e_phoff = 64;
        eh.e_phentsize = sizeof ph;
        eh.e_phnum = 1;
        memcpy(b + 64, &ph, sizeof ph);
    }
    if (how & IN_SECTION) {
        Elf64_Shdr sh[2];
        memset(sh, 0, sizeof sh);
        sh[1].sh_type = SHT_NOTE;
        sh[1].sh_offset = 128;
        sh[1].sh_size = notes;
        sh[1].sh_addralign = a;
        eh.e_shoff = 512;
        eh.e_shentsize = sizeof sh[0];
        eh.e_shnum = 2;
        memcpy(b + 512, sh, sizeof sh);
    }
    memcpy(b, &eh, sizeof eh);
    return 640;
}

static const unsigned char ID20[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0x10};
#define ID20_HEX "build-id:deadbeef0102030405060708090a0b0c0d0e0f10"

static int identify_bytes(const char *name, const unsigned char *b, size_t len, kc_toolchain *t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    write_file(path, b, len);
    return kc_toolchain_identify(path, t);
}

/* ---- the tests ---- */

static void test_build_id_is_what_binutils_reads(void **state) {
    (void)state;
    kc_toolchain t;
    local_or_skip(&t);
    assert_int_equal(strncmp(t.id, "build-id:", 9), 0);
    assert_non_null(strstr(t.path, "nvrtc"));
    char cmd[4200], line[512], want[300] = "";
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", t.path);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p))
        if (sscanf(line, " Build ID: %256s", want) == 1) break;
    if (p) pclose(p);
    if (!want[0]) { /* no binutils: file(1) says BuildID[sha1]=<hex> */
        snprintf(cmd, sizeof cmd, "file -L '%s' 2>/dev/null", t.path);
        p = popen(cmd, "r");
        char *s;
        if (p && fgets(line, sizeof line, p) && (s = strstr(line, "BuildID[")) && (s = strchr(s, '=')))
            sscanf(s + 1, "%256[0-9a-f]", want);
        if (p) pclose(p);
    }
    if (!want[0]) {
        print_message("neither readelf nor file could read a build-id (tools/deps.sh installs binutils): skipped\n");
        skip();
    }
    assert_string_equal(t.id + 9, want);
    /* The identity is of the file, not of how it was found. */
    kc_toolchain u;
    assert_int_equal(kc_toolchain_identify(t.path, &u), KC_OK);
    assert_string_equal(u.id, t.id);
}

static void test_a_copy_under_another_name_has_the_same_key(void **state) {
    (void)state;
    kc_toolchain t;
    local_or_skip(&t);
    char dir[4096], copy[4200], other[4200];
    snprintf(dir, sizeof dir, "%s/x", tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(copy, sizeof copy, "%s/libfoo.so", dir);
    copy_file(t.path, copy);
    char k_default[4096], k_copy[4096], k_env_same[4096];
    in_child(NULL, NULL, key_of_spec, NULL, k_default, sizeof k_default);
    in_child(copy, NULL, key_of_spec, NULL, k_copy, sizeof k_copy);
    in_child(t.path, NULL, key_of_spec, NULL, k_env_same, sizeof k_env_same);
    assert_int_equal(strlen(k_default), KC_KEY_HEX_LEN);
    assert_string_equal(k_copy, k_default);
    assert_string_equal(k_env_same, k_default);
    /* Another build (here: the same bytes with another build-id) is another key. */
    size_t len;
    uint8_t *b = kct_read(copy, &len);
    assert_non_null(b);
    unsigned char raw[64];
    size_t idlen = (strlen(t.id) - 9) / 2;
    for (size_t i = 0; i < idlen; i++) sscanf(t.id + 9 + 2 * i, "%2hhx", &raw[i]);
    uint8_t *at = NULL;
    for (size_t i = 0; i + idlen <= len && i < 65536 && !at; i++)
        if (memcmp(b + i, raw, idlen) == 0) at = b + i;
    assert_non_null(at);
    at[idlen - 1] ^= 0xff;
    snprintf(other, sizeof other, "%s/libnvrtc.so.13", dir);
    write_file(other, b, len);
    free(b);
    char k_other[4096];
    in_child(other, NULL, key_of_spec, NULL, k_other, sizeof k_other);
    assert_int_equal(strlen(k_other), KC_KEY_HEX_LEN);
    assert_string_not_equal(k_other, k_default);
    /* KCACHE_NVRTC naming nothing: no NVRTC, no guess (no cache: nothing recorded to use). */
    char k_none[4096];
    in_child("/nonexistent/libnvrtc.so.13", NULL, key_of_spec, NULL, k_none, sizeof k_none);
    assert_int_equal(strncmp(k_none, "ERR -11", 7), 0); /* KC_ENONVRTC */
    assert_non_null(strstr(k_none, "KCACHE_NVRTC"));
    /* KCACHE_TOOLCHAIN pins the identity, NVRTC or not: the default key again, by the id alone. */
    char k_pinned[4096];
    in_child("/nonexistent/libnvrtc.so.13", t.id, key_of_spec, NULL, k_pinned, sizeof k_pinned);
    assert_string_equal(k_pinned, k_default);
}

static void test_build_ids_of_elfs_made_here(void **state) {
    (void)state;
    unsigned char b[640];
    kc_toolchain t;
    const unsigned hows[] = {IN_PHDR,
                             IN_SECTION,
                             IN_PHDR | IN_SECTION,
                             IN_PHDR | OTHER_NOTE_FIRST,
                             IN_SECTION | OTHER_NOTE_FIRST | ALIGN8,
                             IN_PHDR | ALIGN8};
    for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
        size_t n = make_elf(b, hows[i], ID20, sizeof ID20);
        if (identify_bytes("libnvrtc.so.13.0.88", b, n, &t) != KC_OK)
            fail_msg("how %u: %s", hows[i], kc_error_last()->message);
        assert_string_equal(t.id, ID20_HEX);
        assert_string_equal(t.version, "13.0.88");
        assert_int_equal(t.size, 640);
    }
    /* A 16-byte build-id (md5/uuid style), and the version of names without one. */
    make_elf(b, IN_PHDR, ID20, 16);
    assert_int_equal(identify_bytes("libfoo.so", b, 640, &t), KC_OK);
    assert_string_equal(t.id, "build-id:deadbeef0102030405060708090a0b0c");
    assert_string_equal(t.version, "");
    assert_int_equal(kc_toolchain_id_check(t.id), KC_OK);
}

static void test_no_build_id_is_a_hash_of_the_bytes(void **state) {
    (void)state;
    unsigned char b[640];
    kc_toolchain t;
    const unsigned hows[] = {IN_PHDR | NO_BUILD_ID | OTHER_NOTE_FIRST, IN_SECTION | NO_BUILD_ID, NO_BUILD_ID};
    for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
        size_t n = make_elf(b, hows[i], ID20, sizeof ID20);
        b[600] = (unsigned char)i; /* three different files */
        assert_int_equal(identify_bytes("libnvrtc.so.13", b, n, &t), KC_OK);
        XXH128_hash_t h = XXH3_128bits(b, n);
        char want[64];
        snprintf(want, sizeof want, "xxh3-128:%016llx%016llx", (unsigned long long)h.high64,
                 (unsigned long long)h.low64);
        assert_string_equal(t.id, want);
        assert_int_equal(kc_toolchain_id_check(t.id), KC_OK);
        /* The same again (memoised per file), and never the name or size: another name, same id. */
        kc_toolchain u;
        assert_int_equal(identify_bytes("libother.so", b, n, &u), KC_OK);
        assert_string_equal(u.id, t.id);
    }
}

static void expect_corrupt(const char *what, const unsigned char *b, size_t len) {
    kc_toolchain t;
    int rc = identify_bytes("libbad.so", b, len, &t);
    if (rc != KC_ECORRUPT) fail_msg("%s: rc %d (%s), want KC_ECORRUPT", what, rc, kc_error_last()->message);
    assert_non_null(strstr(kc_error_last()->message, "libbad.so"));
    assert_string_equal(t.id, "");
}

static void test_corrupt_files_are_clear_errors(void **state) {
    (void)state;
    unsigned char b[640], c[640];
    make_elf(b, IN_PHDR | IN_SECTION, ID20, sizeof ID20);
    expect_corrupt("empty", b, 0);
    expect_corrupt("truncated header", b, 40);
    expect_corrupt("header only: its headers lie past the end", b, 100);
    expect_corrupt("cut inside the note", b, 140);
    expect_corrupt("text",
                   (const unsigned char *)"#!/bin/sh\necho not a library at all, honest\n................"
                                          "................................",
                   90);
    memcpy(c, b, 640);
    c[EI_CLASS] = ELFCLASS32;
    expect_corrupt("32-bit", c, 640);
    memcpy(c, b, 640);
    ((Elf64_Ehdr *)c)->e_type = ET_EXEC;
    expect_corrupt("an executable", c, 640);
#if MACHINE != EM_NONE
    memcpy(c, b, 640);
    ((Elf64_Ehdr *)c)->e_machine = MACHINE == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
    expect_corrupt("another machine", c, 640);
#endif
    memcpy(c, b, 640);
    ((Elf64_Ehdr *)c)->e_phnum = 60000;
    expect_corrupt("60000 program headers", c, 640);
    memcpy(c, b, 640);
    ((Elf64_Ehdr *)c)->e_phoff = UINT64_MAX - 8;
    expect_corrupt("program headers at the end of the address space", c, 640);
    memcpy(c, b, 640);
    ((Elf64_Phdr *)(c + 64))->p_offset = UINT64_MAX - 4;
    expect_corrupt("a note segment past the end (overflowing)", c, 640);
    memcpy(c, b, 640);
    ((Elf64_Phdr *)(c + 64))->p_filesz = 100000;
    expect_corrupt("a note segment longer than the file", c, 640);
    memcpy(c, b, 640);
    uint32_t huge = 0xfffffff0u;
    memcpy(c + 128 + 4, &huge, 4); /* descsz */
    expect_corrupt("a note's descsz past its segment", c, 640);
    memcpy(c, b, 640);
    memcpy(c + 128, &huge, 4); /* namesz */
    expect_corrupt("a note's namesz past its segment", c, 640);
    make_elf(c, IN_PHDR, ID20, 0);
    expect_corrupt("an empty build-id", c, 640);
    /* The real library, truncated: its headers promise what is not there. */
    kc_toolchain t;
    if (kc_toolchain_local(&t) == KC_OK) {
        size_t len;
        uint8_t *lib = kct_read(t.path, &len);
        assert_non_null(lib);
        expect_corrupt("libnvrtc cut to 64 bytes", lib, 64);
        expect_corrupt("libnvrtc cut to 600 bytes", lib, 600);
        free(lib);
    }
    /* A folder or a FIFO is not a library (and opening the FIFO does not hang); a missing file
     * is an error with its name. */
    assert_int_not_equal(kc_toolchain_identify(tmp, &t), KC_OK);
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/libfifo.so", tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(kc_toolchain_identify(fifo, &t), KC_ECORRUPT);
    unlink(fifo);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/none.so", tmp);
    assert_int_not_equal(kc_toolchain_identify(missing, &t), KC_OK);
    assert_non_null(strstr(kc_error_last()->message, "none.so"));
}

static void test_random_mutations_never_crash(void **state) {
    (void)state;
    unsigned char b[640], c[640];
    make_elf(b, IN_PHDR | IN_SECTION | OTHER_NOTE_FIRST, ID20, sizeof ID20);
    srand(14);
    int ok = 0, bad = 0;
    for (int i = 0; i < 1000; i++) {
        memcpy(c, b, sizeof b);
        int flips = 1 + rand() % 6;
        for (int f = 0; f < flips; f++) c[rand() % 200] = (unsigned char)rand(); /* headers and notes */
        size_t len = rand() % 4 ? sizeof c : (size_t)(rand() % 640);
        kc_toolchain t;
        int rc = identify_bytes("libmut.so", c, len, &t);
        if (rc == KC_OK) ok++, assert_int_equal(kc_toolchain_id_check(t.id), KC_OK);
        else bad++, assert_int_equal(rc, KC_ECORRUPT);
    }
    assert_true(ok > 0 && bad > 0);
}

static void test_ids_and_meta(void **state) {
    (void)state;
    assert_int_equal(kc_toolchain_id_check(ID20_HEX), KC_OK);
    assert_int_equal(kc_toolchain_id_check("xxh3-128:0123456789abcdef0123456789abcdef"), KC_OK);
    const char *bad[] = {
        "",         "build-id:",          "build-id:abc",  "build-id:ABCD",
        "deadbeef", "build-id:dead beef", "xxh3-128:0123", "nvrtc 13.0 (libnvrtc.so.13, 109338064 bytes)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(kc_toolchain_id_check(bad[i]), KC_EINVAL);
    kc_toolchain t;
    memset(&t, 0, sizeof t);
    snprintf(t.id, sizeof t.id, ID20_HEX);
    memset(t.path, 'p', 1000);
    t.path[0] = '/';
    char meta[256], id[KC_TOOLCHAIN_ID_MAX];
    assert_int_equal(kc_toolchain_meta(&t, meta, sizeof meta), KC_OK);
    assert_true(strlen(meta) < 256);
    assert_int_equal(strncmp(meta, "nvrtc " ID20_HEX " (...", 6 + strlen(ID20_HEX) + 5), 0);
    assert_int_equal(kc_toolchain_id_of_meta(meta, id), KC_OK);
    assert_string_equal(id, ID20_HEX);
    assert_int_equal(kc_toolchain_id_of_meta("nvrtc 13.0 (libnvrtc.so.13, 109338064 bytes)", id), KC_MISS);
    assert_int_equal(kc_toolchain_id_of_meta("test", id), KC_MISS);
}

static void cache_dir(const char *name, char *out, size_t cap) { snprintf(out, cap, "%s/%s", tmp, name); }

static void record(const char *dir, const char *name, const char *value) {
    kc_cache *c;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_record_set(c, name, value), KC_OK);
    kc_cache_close(c);
}

#define ID_A "build-id:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "build-id:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void test_a_host_without_nvrtc_uses_the_recorded_toolchain(void **state) {
    (void)state;
    char d[4096], out[4096], want[300];
    const char *none = "/nonexistent/libnvrtc.so.13";
    cache_dir("nonvrtc", d, sizeof d);
    in_child(none, NULL, choice_of, d, out, sizeof out); /* nothing recorded: no guess */
    assert_int_equal(strncmp(out, "ERR -11", 7), 0);
    assert_non_null(strstr(out, "KCACHE_NVRTC"));
    assert_non_null(strstr(out, "records no toolchain"));
    record(d, "toolchain." ID_A, "nvrtc " ID_A " (/somewhere/libnvrtc.so.13)");
    in_child(none, NULL, choice_of, d, out, sizeof out);
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_RECORDED, ID_A);
    assert_string_equal(out, want);
    in_child(none, NULL, can_compile, d, out, sizeof out); /* a miss cannot compile, and says why */
    assert_int_equal(strncmp(out, "ERR -11", 7), 0);
    assert_non_null(strstr(out, "KCACHE_NVRTC"));
    record(d, "toolchain." ID_B, "nvrtc " ID_B " (/elsewhere/libnvrtc.so.13)");
    in_child(none, NULL, choice_of, d, out, sizeof out); /* two: still no guess */
    assert_int_equal(strncmp(out, "ERR -11", 7), 0);
    assert_non_null(strstr(out, "2 toolchains"));
    assert_non_null(strstr(out, ID_A));
    assert_non_null(strstr(out, ID_B));
    assert_non_null(strstr(out, "KCACHE_TOOLCHAIN"));
    in_child(none, ID_B, choice_of, d, out, sizeof out); /* a pin decides */
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_PIN_ENV, ID_B);
    assert_string_equal(out, want);
    record(d, "pin", ID_A);
    in_child(none, NULL, choice_of, d, out, sizeof out);
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_PIN, ID_A);
    assert_string_equal(out, want);
    in_child(none, ID_B, choice_of, d, out, sizeof out); /* the environment beats the record */
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_PIN_ENV, ID_B);
    assert_string_equal(out, want);
    in_child(none, "build-id:XYZ", choice_of, d, out, sizeof out); /* a malformed pin is refused */
    assert_int_equal(strncmp(out, "ERR -3", 6), 0);
    assert_non_null(strstr(out, "KCACHE_TOOLCHAIN"));
}

static void test_the_local_nvrtc_wins_and_is_memoised(void **state) {
    (void)state;
    kc_toolchain t;
    local_or_skip(&t);
    char d[4096], out[4096], want[300], copy[4200];
    cache_dir("local", d, sizeof d);
    snprintf(copy, sizeof copy, "%s/libnvrtc-copy.so", tmp);
    copy_file(t.path, copy);
    record(d, "toolchain." ID_A, "nvrtc " ID_A " (/somewhere/libnvrtc.so.13)");
    in_child(copy, NULL, choice_of, d, out, sizeof out); /* local beats recorded; writes the memo */
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_LOCAL, t.id);
    assert_string_equal(out, want);
    in_child(copy, NULL, can_compile, d, out, sizeof out);
    assert_string_equal(out, "OK");
    /* The memo is trusted while the file's stat is unchanged (so a warm process need not open
     * the library): poison it, and the poisoned identity is used ... */
    kc_cache *c;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    char name[64], value[8400];
    snprintf(name, sizeof name, "nvrtc.file.%016llx", (unsigned long long)XXH3_64bits(copy, strlen(copy)));
    assert_int_equal(kc_cache_record_get(c, name, value, sizeof value), KC_OK);
    char *at = strstr(value, t.id);
    assert_non_null(at);
    memcpy(at, ID_B, strlen(ID_B)); /* same length as a 20-byte build-id */
    assert_int_equal(kc_cache_record_set(c, name, value), KC_OK);
    in_child(copy, NULL, choice_of, d, out, sizeof out);
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_LOCAL, ID_B);
    assert_string_equal(out, want);
    /* ... but never to compile: the compiler is identified from its file. */
    in_child(copy, NULL, can_compile, d, out, sizeof out);
    assert_int_equal(strncmp(out, "ERR -11", 7), 0);
    assert_non_null(strstr(out, t.id));
    /* A changed file (here only its times) is identified again, and the memo rewritten. */
    assert_int_equal(utimensat(AT_FDCWD, copy, NULL, 0), 0);
    in_child(copy, NULL, choice_of, d, out, sizeof out);
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_LOCAL, t.id);
    assert_string_equal(out, want);
    assert_int_equal(kc_cache_record_get(c, name, value, sizeof value), KC_OK);
    assert_non_null(strstr(value, t.id));
    /* A pin that is not the local NVRTC: keys use it, a miss may not compile. */
    assert_int_equal(kc_cache_record_set(c, "pin", ID_A), KC_OK);
    in_child(copy, NULL, can_compile, d, out, sizeof out);
    assert_int_equal(strncmp(out, "ERR -11", 7), 0);
    assert_non_null(strstr(out, ID_A));
    assert_non_null(strstr(out, "unpin"));
    kc_cache_close(c);
    /* Read-only: no memo is written, the answer is the same. */
    char ro[4096];
    cache_dir("readonly", ro, sizeof ro);
    record(ro, "unrelated", "1");
    setenv("KCACHE_READONLY", "1", 1);
    in_child(copy, NULL, choice_of, ro, out, sizeof out);
    unsetenv("KCACHE_READONLY");
    snprintf(want, sizeof want, "%d %s", KC_TOOLCHAIN_LOCAL, t.id);
    assert_string_equal(out, want);
    o.dir = ro;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_record_get(c, name, value, sizeof value), KC_MISS);
    kc_cache_close(c);
}

/* kc_toolchain_locate fills the caller's buffer only when the path and its NUL fit. */
static void test_locate_fits_exactly(void **state) {
    (void)state;
    char path[4096], out[4096];
    if (kc_toolchain_locate(path, sizeof path) != KC_OK) skip(); /* no NVRTC here */
    size_t n = strlen(path);
    memset(out, 'z', sizeof out);
    assert_int_equal(kc_toolchain_locate(out, n), KC_EINVAL);
    assert_int_equal(out[n], 'z');
    assert_int_equal(kc_toolchain_locate(out, n + 1), KC_OK);
    assert_string_equal(out, path);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--child") == 0) { /* in_child's fresh process */
        static const struct {
            const char *name;
            child_fn fn;
        } fns[] = {{"key_of_spec", key_of_spec}, {"choice_of", choice_of}, {"can_compile", can_compile}};
        char out[4096] = "";
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
            if (strcmp(argv[2], fns[i].name) == 0) fns[i].fn(argv[3][0] ? argv[3] : NULL, out, sizeof out);
        fputs(out, stdout);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_id_is_what_binutils_reads),
        cmocka_unit_test(test_a_copy_under_another_name_has_the_same_key),
        cmocka_unit_test(test_build_ids_of_elfs_made_here),
        cmocka_unit_test(test_no_build_id_is_a_hash_of_the_bytes),
        cmocka_unit_test(test_corrupt_files_are_clear_errors),
        cmocka_unit_test(test_random_mutations_never_crash),
        cmocka_unit_test(test_ids_and_meta),
        cmocka_unit_test(test_locate_fits_exactly),
        cmocka_unit_test(test_a_host_without_nvrtc_uses_the_recorded_toolchain),
        cmocka_unit_test(test_the_local_nvrtc_wins_and_is_memoised),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

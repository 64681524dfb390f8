/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_config.c — libFuzzer target: configuration files (ccache's `key = value` lines, config/file.c)
 * read as the system file or as a cache directory's kcache.conf by a whole kc_cache_open, every
 * setting then shown (kc_config_get: the URL lists' passwords hidden); and the input's first line as
 * a list of remotes (`URL|attr… URL…`, store/remote_list.c).  The custom mutator keeps the input a
 * configuration file: half the time it adds or replaces a line `key = value` with a key of the table
 * and a value of each type's edges; else libFuzzer's own mutation.  No checksum or version to rebuild:
 * the format has none.  Settings that name other files to read (key files, keyrings) are left to
 * the targets of those files (fuzz_files), so an input never makes this one read the host's files.
 * The input's lines (up to 16, the blanks around their first '=' dropped) are also given as
 * kc_options.settings ("name=value", config/config.c) to a second open: refused or applied, never a
 * crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcache.h"
#include "store/registry.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

static const char *const values[] = {
    "",
    "0",
    "1",
    "yes",
    "off",
    "maybe",
    "600",
    "86400",
    "86401",
    "0.5",
    "1e300",
    "-5",
    "inf",
    "5G",
    "64K",
    "18446744073709551615",
    "5Q",
    "/tmp/x",
    "redis://a:1",
    "redis://u:p@h:2/0|read-only mem://x",
    "r://:s@h|ttl=9|bogus",
    "a b",
    " = ",
    "#",
    "\t",
    "sm_90",
    "build-id:00000000000000000000000000000000000000aa",
};

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    srand(seed);
    if (rand() % 2) return LLVMFuzzerMutate(data, size, max);
    char line[512];
    const kc_config_row *r = kc_config_row_of(rand() % KC_CONFIG_COUNT);
    int n = snprintf(line, sizeof line, "%s = %s\n", r ? r->name : "x",
                     values[rand() % (sizeof values / sizeof *values)]);
    if (n < 0 || (size_t)n >= sizeof line) return size;
    size_t at = size; /* append, or replace from a line's start */
    if (size && rand() % 2) {
        at = (size_t)rand() % size;
        while (at && data[at - 1] != '\n') at--;
        size = at;
    }
    if (at + (size_t)n > max) return size;
    memcpy(data + at, line, (size_t)n);
    return at + (size_t)n;
}

static char dir[64], sys_path[128], dir_file[160];

static void init(void) {
    snprintf(dir, sizeof dir, "/tmp/kcfuzz-config-XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(sys_path, sizeof sys_path, "%s/system.conf", dir);
    snprintf(dir_file, sizeof dir_file, "%s/c/kcache.conf", dir);
    char c[96];
    snprintf(c, sizeof c, "%s/c", dir);
    if (mkdir(c, 0700) != 0) abort();
    setenv("KCACHE_CONFIG_SYSTEM", sys_path, 1);
}

/* Write the input to `path`; 0, or -1 when the scratch folder is gone (another run's clean-up of
 * /tmp/kcfuzz-*): the input is then skipped, not reported as a crash of the code under test. */
static int put(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = !size || fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The input's lines as kc_options.settings, each "key = value" made "key=value"; a line holding a NUL
 * ends at it (a C string). */
static void settings_open(const uint8_t *data, size_t size, const char *cdir) {
    enum { MAX = 16 };
    char *lines[MAX];
    size_t n = 0;
    for (size_t at = 0; at < size && n < MAX;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        char *l = malloc(len + 1), *eq;
        memcpy(l, data + at, len);
        l[len] = '\0';
        if ((eq = strchr(l, '='))) { /* the blanks around the first '=' */
            char *k = eq, *v = eq + 1;
            while (k > l && (k[-1] == ' ' || k[-1] == '\t')) k--;
            while (*v == ' ' || *v == '\t') v++;
            *k = '=';
            memmove(k + 1, v, strlen(v) + 1);
        }
        lines[n++] = l;
        at += len + 1;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = cdir;
    o.flags = KC_OPEN_DISABLE | KC_OPEN_NO_ENV;
    o.settings = (const char *const *)lines;
    o.nsettings = n;
    kc_cache *c;
    if (kc_cache_open(&c, &o) == KC_OK) kc_cache_close(c);
    for (size_t i = 0; i < n; i++) free(lines[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) init();
    static const char *const elsewhere[] = {"key_file", "keyring", "hmac_key"};
    for (size_t i = 0; i < sizeof elsewhere / sizeof *elsewhere; i++)
        if (memmem(data, size, elsewhere[i], strlen(elsewhere[i]))) return 0;
    /* The first line as a list of remotes. */
    const uint8_t *nl = memchr(data, '\n', size);
    size_t ll = nl ? (size_t)(nl - data) : size;
    char *list = malloc(ll + 1);
    memcpy(list, data, ll);
    list[ll] = '\0';
    static kc_remote_spec specs[KC_REMOTES_MAX];
    size_t n = 0;
    kc_remote_limits lim = KC_REMOTE_LIMITS_INIT;
    (void)kc_remotes_parse(list, &lim, specs, KC_REMOTES_MAX, &n);
    free(list);
    /* The whole input as the system file or as the directory's file (the low bit of its length). */
    int as_dir = size & 1;
    if (put(as_dir ? dir_file : sys_path, data, size)) return 0;
    unlink(as_dir ? sys_path : dir_file);
    char cdir[96];
    snprintf(cdir, sizeof cdir, "%s/c", dir);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = cdir;
    o.flags = KC_OPEN_DISABLE; /* the settings only: no directory made, no remote opened */
    kc_cache *c;
    if (kc_cache_open(&c, &o) == KC_OK) {
        char v[4096], where[512];
        kc_config_origin from;
        for (int id = 0; id < KC_CONFIG_COUNT; id++)
            kc_config_get(kc_cache_config(c), id, v, sizeof v, &from, where, sizeof where);
        kc_cache_close(c);
    }
    settings_open(data, size, cdir);
    return 0;
}

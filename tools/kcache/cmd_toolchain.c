/*
 * cmd_toolchain.c — `kcache toolchain [--json] [--pin ID | --unpin]`: this host's NVRTC by its
 * identity (build-id, file, version), the toolchain pinned and the ones the cache recorded,
 * and the one its lookups' keys use — or why there is none.
 *
 * The one idea: every line is the library's answer (kc_toolchain_local, kc_cache_record_*,
 * kc_cache_toolchain); the command adds nothing but the pin it is asked to set.  It loads no
 * NVRTC: the identity is read from the library's file.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_toolchain(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_toolchain = {
    "toolchain", "kcache toolchain [--json] [--pin ID | --unpin]",
    "Print this host's NVRTC as keys know it: its identity (the GNU build-id of its library,\n"
    "or a hash of the file's bytes when it has none), its file and the version its name\n"
    "carries — read from the file, without loading it.  Then the toolchain pinned\n"
    "(KCACHE_TOOLCHAIN, or the cache's own pin), the toolchains whose entries the cache\n"
    "recorded, and the one its lookups' keys use.  A host without NVRTC uses the recorded one\n"
    "when there is exactly one; with several, pin one.\n"
    "  --pin ID   keys in this cache use toolchain ID (as printed here) on every host,\n"
    "             whatever its NVRTC; a host whose NVRTC is not ID then never compiles\n"
    "  --unpin    remove the cache's pin",
    cmd_toolchain};

typedef struct rec_ctx {
    int json, n;
} rec_ctx;

/* A recorded toolkit headers digest ("toolkit_headers.<digest>"). */
static int print_name(const char *name, const char *value, void *ctx) {
    (void)value;
    rec_ctx *r = ctx;
    const char *digest = name + strlen("toolkit_headers.");
    if (r->json) printf("%s\"%s\"", r->n ? ", " : "", digest);
    else printf("%-10s%s  (toolkit headers of stored entries)\n", r->n ? "" : "recorded", digest);
    r->n++;
    return 0;
}

static int print_recorded(const char *name, const char *value, void *ctx) {
    rec_ctx *r = ctx;
    const char *id = name + strlen("toolchain.");
    if (kc_toolchain_id_check(id) != KC_OK) return 0;
    if (r->json) {
        int first = 1;
        printf("%s{", r->n ? ", " : "");
        json_kv_str(stdout, &first, "id", id);
        json_kv_str(stdout, &first, "toolchain", value);
        printf("}");
    } else {
        size_t pre = strlen("nvrtc ") + strlen(id) + 1; /* "nvrtc <id> (<path>)": the id is printed already */
        printf("%-10s%s  %s\n", r->n ? "" : "recorded", id, strlen(value) > pre && strncmp(value + 6, id, strlen(id)) == 0 ? value + pre : value);
    }
    r->n++;
    return 0;
}

static int cmd_toolchain(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_toolchain;
    int json = 0, unpin = 0;
    const char *pin = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(c0);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--unpin") == 0) {
            unpin = 1;
        } else if (strcmp(argv[i], "--pin") == 0 || strncmp(argv[i], "--pin=", 6) == 0) {
            pin = argv[i][5] == '=' ? argv[i] + 6 : i + 1 < argc ? argv[++i] : NULL;
            if (!pin) return cli_usage_error(c0, "--pin needs a toolchain identity", NULL);
        } else {
            return cli_usage_error(c0, "unknown argument", argv[i]);
        }
    }
    if (pin && unpin) return cli_usage_error(c0, "--pin and --unpin together", NULL);
    if (pin && kc_toolchain_id_check(pin) != KC_OK) return cli_usage_error(c0, kc_error_last()->message, NULL);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    if ((pin || unpin) && kc_cache_record_set(c, "pin", pin) != KC_OK) {
        kc_cache_close(c);
        return cli_fail(pin ? "pinning the toolchain" : "unpinning the toolchain");
    }
    kc_toolchain t;
    int lrc = kc_toolchain_local(&t);
    char lwhy[1400];
    snprintf(lwhy, sizeof lwhy, "%s", lrc ? kc_error_last()->message : "");
    const char *env = getenv("KCACHE_TOOLCHAIN");
    char rpin[KC_TOOLCHAIN_ID_MAX + 64] = "";
    int have_rpin = kc_cache_record_get(c, "pin", rpin, sizeof rpin) == KC_OK;
    kc_toolchain_choice ch;
    int crc = kc_cache_toolchain(c, &ch);
    char cwhy[2000];
    snprintf(cwhy, sizeof cwhy, "%s", crc ? kc_error_last()->message : "");
    char headers[33] = "", hwhy[600] = "";
    if (kc_toolkit_headers_id(headers) != KC_OK) snprintf(hwhy, sizeof hwhy, "%s", kc_error_last()->message);
    rec_ctx r = {json, 0};
    if (json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "dir", kc_cache_dir(c));
        printf(", \"local\": ");
        if (lrc) {
            printf("null");
        } else {
            int f = 1;
            printf("{");
            json_kv_str(stdout, &f, "id", t.id);
            json_kv_str(stdout, &f, "build_id", strncmp(t.id, "build-id:", 9) == 0 ? t.id + 9 : "");
            json_kv_str(stdout, &f, "path", t.path);
            json_kv_str(stdout, &f, "version", t.version);
            printf("}");
        }
        printf(", \"local_error\": ");
        lrc ? json_str(stdout, lwhy) : (void)printf("null");
        printf(", \"pinned\": ");
        if ((env && *env) || have_rpin) {
            int f = 1;
            printf("{");
            json_kv_str(stdout, &f, "id", env && *env ? env : rpin);
            json_kv_str(stdout, &f, "by", env && *env ? "KCACHE_TOOLCHAIN" : "record");
            printf("}");
        } else {
            printf("null");
        }
        printf(", \"recorded\": [");
        kc_cache_record_foreach(c, "toolchain.", print_recorded, &r);
        printf("], \"keys_use\": ");
        if (crc) {
            printf("null");
        } else {
            int f = 1;
            printf("{");
            json_kv_str(stdout, &f, "id", ch.id);
            json_kv_str(stdout, &f, "from", ch.from == KC_TOOLCHAIN_PIN_ENV ? "KCACHE_TOOLCHAIN"
                                            : ch.from == KC_TOOLCHAIN_PIN   ? "pin"
                                            : ch.from == KC_TOOLCHAIN_LOCAL ? "local"
                                                                            : "recorded");
            printf("}");
        }
        printf(", \"keys_error\": ");
        crc ? json_str(stdout, cwhy) : (void)printf("null");
        printf(", \"toolkit_headers\": ");
        headers[0] ? json_str(stdout, headers) : (void)printf("null");
        printf(", \"toolkit_headers_error\": ");
        headers[0] ? (void)printf("null") : json_str(stdout, hwhy);
        printf(", \"toolkit_headers_recorded\": [");
        rec_ctx hr = {1, 0};
        kc_cache_record_foreach(c, "toolkit_headers.", print_name, &hr);
        printf("]}\n");
    } else {
        if (lrc) printf("%-10snone: %s\n", "local", lwhy);
        else printf("%-10s%s  nvrtc%s%s (%s)\n", "local", t.id, t.version[0] ? " " : "", t.version, t.path);
        if (env && *env) printf("%-10s%s  (KCACHE_TOOLCHAIN)\n", "pinned", env);
        if (have_rpin) printf("%-10s%s  (the cache's pin%s)\n", "pinned", rpin, env && *env ? ", overridden" : "");
        if (!(env && *env) && !have_rpin) printf("%-10snone\n", "pinned");
        kc_cache_record_foreach(c, "toolchain.", print_recorded, &r);
        if (!r.n) printf("%-10snone\n", "recorded");
        if (crc) printf("%-10snone: %s\n", "keys use", cwhy);
        else printf("%-10s%s  (%s)\n", "keys use", ch.id, ch.how);
        /* The toolkit's headers, for kernels that ask for them (KCACHE_TOOLKIT_HEADERS pins it where there are none). */
        if (headers[0]) printf("%-10s%s  (this host's toolkit headers)\n", "headers", headers);
        else printf("%-10snone: %s\n", "headers", hwhy);
        rec_ctx hr = {0, 0};
        kc_cache_record_foreach(c, "toolkit_headers.", print_name, &hr);
    }
    kc_cache_close(c);
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* docs/fleet.md's "Monitoring" block.  What its text says the runtime has: an open cache, `cache`,
 * and an endpoint of its own that serves a text, `serve`.  Run: over a scratch cache where one
 * lookup was counted, the block serves the whole OpenMetrics text. */
#include <kcache.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int served;

static void serve(const char *text) {
    size_t n = strlen(text);
    served = n > 6 && strcmp(text + n - 6, "# EOF\n") == 0 &&
             strstr(text, "kcache_lookup_duration_seconds_count{outcome=\"disk\"} 1\n") != NULL;
}

static void docs_block(kc_cache *cache) {
@BLOCK@
}

int main(void) {
    char dir[] = "/tmp/kcache-docs-metrics-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *cache;
    if (kc_cache_open(&cache, &o) != KC_OK) return 1;
    kc_cache_count(cache, NULL, KC_STAT_HITS, 1);
    docs_block(cache);
    kc_cache_close(cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    if (!served) fprintf(stderr, "the block did not serve the metrics text\n");
    return served ? 0 : 1;
}

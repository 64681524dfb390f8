/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_graph_key_golden.c — a graph's key is a fixed function of its description, toolchain and
 * key rules: the bundled softmax spec under a pinned toolchain must give a fixed key, forever, or
 * the key's rules changed on purpose (and the value here changes with a reason in the commit).
 * It guards every component of the graph key against a silent change — among them
 * "kernel_binding" (graph_key.c): entries of builds that could bind a kernel to a lowering guessed
 * from a stored unit's image live under other keys and are never read.
 * Regenerate (only with a deliberate key change): KCACHE_PRINT_GOLDEN=1 prints the key.
 */
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "kcache.h"

#define GOLDEN_SOFTMAX "16c5e9ea6c41c3556c067442f5e5453e"

static void test_softmax_key_is_golden(void **state) {
    (void)state;
    setenv("KCACHE_TOOLCHAIN", "build-id:00000000000000000000000000000000000000aa", 1);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json") != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_key key;
    if (kc_graph_key(d, &key, NULL) != KC_OK) fail_msg("%s", kc_error_last()->message);
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&key, hex);
    if (getenv("KCACHE_PRINT_GOLDEN")) printf("softmax %s\n", hex);
    assert_string_equal(hex, GOLDEN_SOFTMAX);
    kc_graph_desc_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_softmax_key_is_golden)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

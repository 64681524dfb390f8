/* SPDX-License-Identifier: Apache-2.0 */
/* The README's "Call sites (guards)" block.  What its text says the caller has: an open `cache`;
 * `spec`, the site's description as written; the call's `inputs` (`ninputs`), `owners` (`nowners`)
 * and `globals`; the runtime's run(kc_graph *), run_eager(void) and release_graph(void *); and
 * `module`, an owner. */
#include <kcache.h>
static void run(kc_graph *g) { (void)g; }
static void run_eager(void) {}
static void release_graph(void *g) { kc_graph_release((kc_graph *)g); }

static void readme_block(kc_cache *cache, const kc_graph_desc *spec, const kc_tensor_meta *inputs, size_t ninputs,
                         const uintptr_t *owners, size_t nowners, uint64_t globals, const void *module) {
@BLOCK@
}

int main(void) {
    (void)readme_block;
    return 0;
}

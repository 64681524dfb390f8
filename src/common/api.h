/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/api.h — the discipline of the public structs a caller fills or lends: their versions.
 *
 * [Note: versioned structs]
 * A struct that crosses the API in the caller's memory and may grow carries `unsigned version`
 * as its first field, a KC_<NAME>_VERSION and a KC_<NAME>_INIT that names every field (so a C or
 * C++ caller built with -Wextra -Werror compiles, and keeps compiling as fields are added):
 *   - one the caller fills (kc_kernel_src, the options structs): kcache reads only the fields of
 *     the caller's version;
 *   - one kcache fills (kc_graph_info, kc_bundle_report, kc_gc_report, kc_verify_report,
 *     kc_signature_report, kc_explain, kc_graph_tensor_desc, kc_loaded_stats, kc_site_info): kcache
 *     fills a full struct of its own and copies out only the bytes of the caller's version (its
 *     size at that version), so a program built against older headers never has bytes written
 *     past its struct (as Windows' cbSize, libgit2's version field).
 * Both refuse, with KC_EVERSION and before doing anything, a version this build does not know —
 * 0 included, which is what a struct never initialised (or zeroed) most often holds, so a caller
 * who forgot the _INIT learns it at the first call instead of reading fields it never set.  A
 * field is added only at the end, with the version raised and the sizes table of its copy-out
 * given the old size at the old version.  Structs passed in arrays (kc_tensor, kc_tensor_meta,
 * kc_value) and value types (kc_key, kc_target) have a fixed layout and an _INIT only: a field
 * added to them would be a new type.  Not yet versioned, and so fixed until they are: kc_stats (an
 * array indexed by kc_stat; its growth is KC_STAT_COUNT's), kc_site_stats (kc_site_info is where
 * a site's counters grow), kc_site_answer, kc_remote_state (a backend's table fills it),
 * kc_toolchain_choice, and the result arrays of the prewarm and coverage reports (a caller indexes
 * them with its own sizeof).  A struct kcache allocates or lends one at a time (kc_compiled,
 * kc_cache_item, the reports' heads) grows without the caller's help.
 */
#ifndef KC_COMMON_API_H
#define KC_COMMON_API_H

#include <stddef.h>

/** KC_OK when 1 <= version <= current, else KC_EVERSION naming `type` and how to initialise it (`init`). */
int kc_api_version(const char *func, const char *type, const char *init, unsigned version, unsigned current);

/**
 * Copy `full` (a struct filled by kcache, of the current version) to the caller's `out`: the first
 * `size` bytes — the struct's size at the caller's version — then the caller's version put back in
 * the first field (kcache's own filling may have zeroed it).
 */
void kc_api_copy_out(void *out, const void *full, size_t size, unsigned version);

#endif

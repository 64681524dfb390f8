/* SPDX-License-Identifier: Apache-2.0 */
/*
 * show.h — between `kcache show`'s two parts: cmd_show.c finds the objects a KEY prefix or a SPEC
 * names; show_object.c prints one.  Callers: cmd_show.c only.
 */
#ifndef KCACHE_CLI_SHOW_H
#define KCACHE_CLI_SHOW_H

#include "cli.h"

#define SHOWN_CAP (4 * 4096 + 1) /* a name of the entry's longest, every byte escaped */

/** A graph entry `e` stored as `it` (its images resolved; `extract`: a folder for them, or NULL); 0 or an exit code. */
int show_graph(kc_cache *c, const kc_cache_item *it, kc_entry *e, int json, int first_obj, const char *extract);
/** An image: its reference, whether its bytes are its digests', who refers to it; 0 or an exit code. */
int show_image(kc_cache *c, const kc_cache_item *it, const kc_entry *e, int json, int first_obj);
/** A unit record: its image and its names; 0 or an exit code. */
int show_unit(kc_cache *c, const kc_cache_item *it, const kc_entry *e, int json, int first_obj);

#endif

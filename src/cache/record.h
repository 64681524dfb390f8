/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/record.h — the cache directory's record (record.c; its grammar is there) and the
 * toolchain choice built on it (toolchain_choice.c), as the library's own parts see them.
 *
 * May include it: src/cache/ itself, the graph part (lookup.c: may a miss compile, and what
 * it stored) and bundle/bundle.c (what an import stored).  Callers use cache.h's
 * kc_cache_record_* and kc_cache_toolchain instead.
 */
#ifndef KC_CACHE_RECORD_H
#define KC_CACHE_RECORD_H

#include "kcache/cache.h"

/** The largest record read or written. */
#define KC_RECORD_MAX (256 * 1024)
/** The most fields a record is read with (more are ignored). */
#define KC_RECORD_FIELDS 512

/** A record as read: fields point into data. */
typedef struct kc_record {
    char *data;
    size_t n;
    const char *name[KC_RECORD_FIELDS];
    const char *value[KC_RECORD_FIELDS];
} kc_record;

/** Read the record in one read: KC_OK, KC_MISS (no file, or a disabled cache), an error. */
int kc_record_load_(kc_cache *c, kc_record *r);
/** Free what kc_record_load_ read; accepts an empty record. */
void kc_record_free_(kc_record *r);
/** The value of `name`, or NULL. */
const char *kc_record_find_(const kc_record *r, const char *name);

/**
 * Set (value non-NULL) or remove `name`, under the record's lock.  With cap_prefix, at most
 * cap_n fields of that prefix remain: the oldest go first.  KC_EREADONLY for a read-only or
 * disabled cache.
 */
int kc_record_set_(kc_cache *c, const char *name, const char *value, const char *cap_prefix, size_t cap_n);

/**
 * Whether a miss may compile for keys that use `choice`: KC_OK when the local NVRTC is that
 * toolchain; else KC_ENONVRTC saying why (no NVRTC here — naming KCACHE_NVRTC —, or a pinned
 * or recorded toolchain that is not the local one).  Identifies the local NVRTC by opening it.
 */
int kc_cache_toolchain_can_compile_(const kc_toolchain_choice *choice);

/**
 * Record that entries made by the toolchain of META string `meta` (kc_toolchain_meta's form;
 * anything else is ignored) are stored in `c`: the field "toolchain.<id>".  Best effort
 * (a read-only cache, a failed write: logged), once per process, directory and toolchain.
 */
void kc_cache_toolchain_note_(kc_cache *c, const char *meta);

/** The record's field prefix of the toolkit header digests that stored entries used. */
#define KC_TOOLKIT_RECORD_PREFIX "toolkit_headers."

/**
 * Record that an entry whose META toolchain string is `meta` was stored: when it ends in
 * " headers <32 hex>" (a graph with the toolkit's headers), the field
 * "toolkit_headers.<digest>", so that a host without the toolkit's headers can key such
 * graphs.  Best effort, once per process and digest; nothing for other strings.
 */
void kc_cache_toolkit_note_(kc_cache *c, const char *meta);

#endif

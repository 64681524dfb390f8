/*
 * mutate_json.h — a structure-aware mutator for the JSON documents kcache reads (graph specs,
 * manifests), shared by fuzz_spec.c and fuzz_manifest.c.
 *
 * The one idea: a byte flipped in JSON is mostly a syntax error, which the reader refuses at its
 * first check, so the mutations seldom reach what the document says.  This mutator parses the
 * input with cJSON, changes one value — a string's bytes (libFuzzer's mutation) or a token the
 * format uses in its place, a number among edge values, a value's type, an array element or an
 * object member dropped, doubled, moved or renamed — and prints it again, always well formed.  One time
 * in eight (and whenever the input is not JSON) the bytes are mutated raw, so the reader's syntax
 * checks are fuzzed too.  `tokens` are strings the format gives meaning to (the target's own).
 * The library's reader (src/common/json.c) is what the target then runs; cJSON only mutates.
 * Must not: write past `max`; fail (it always returns a size).
 */
#ifndef KCACHE_FUZZ_MUTATE_JSON_H
#define KCACHE_FUZZ_MUTATE_JSON_H

#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mutate_entry.h" /* fz_rand, LLVMFuzzerMutate */

static inline size_t fz_json_list(cJSON *v, cJSON **all, size_t n, size_t cap) {
    if (n < cap) all[n++] = v;
    for (cJSON *c = v->child; c; c = c->next) n = fz_json_list(c, all, n, cap);
    return n;
}

static inline void fz_json_change(cJSON *root, cJSON *v, uint64_t *rs, const char *const *tokens, size_t ntok) {
    static const double edge[] = {
        0, 1, -1, 2, 3, 31, 32, 1024, 65536, 4294967296.0, -2147483649.0, 1e300, 0.5, 9007199254740993.0};
    uint32_t r = fz_rand(rs) % 9;
    if (r == 8 && v->string && !(v->type & cJSON_StringIsConst)) { /* a member renamed (a key the format knows) */
        const char *t = tokens[fz_rand(rs) % ntok];
        char *k = malloc(strlen(t) + 1);
        if (!k) return;
        memcpy(k, t, strlen(t) + 1);
        cJSON_free(v->string);
        v->string = k;
    } else if (r == 0 && v != root) { /* another type in its place (changed in place: cJSON 1.7.15's
                                        * replace and insert lose an array's tail, and so its items) */
        while (v->child) cJSON_Delete(cJSON_DetachItemViaPointer(v, v->child));
        if (v->valuestring && !(v->type & cJSON_IsReference)) cJSON_free(v->valuestring);
        v->valuestring = NULL;
        int keep = v->type & cJSON_StringIsConst;
        switch (fz_rand(rs) % 6) {
        case 0: v->type = cJSON_NULL; break;
        case 1: v->type = fz_rand(rs) & 1 ? cJSON_True : cJSON_False; break;
        case 2:
            v->type = cJSON_Number;
            cJSON_SetNumberValue(v, edge[fz_rand(rs) % 14]);
            break;
        case 3:
            v->type = cJSON_String;
            const char *t = tokens[fz_rand(rs) % ntok];
            v->valuestring = malloc(strlen(t) + 1);
            if (v->valuestring) memcpy(v->valuestring, t, strlen(t) + 1);
            else v->type = cJSON_NULL;
            break;
        case 4: v->type = cJSON_Array; break;
        default: v->type = cJSON_Object; break;
        }
        v->type |= keep;
    } else if (cJSON_IsNumber(v)) {
        cJSON_SetNumberValue(v, edge[fz_rand(rs) % 14]);
    } else if (cJSON_IsString(v)) {
        size_t l = strlen(v->valuestring), cap = l * 2 + 32;
        char *b = malloc(cap + 1);
        if (!b) return;
        if (r < 4) {
            snprintf(b, cap + 1, "%s", tokens[fz_rand(rs) % ntok]);
        } else {
            memcpy(b, v->valuestring, l);
            l = LLVMFuzzerMutate((uint8_t *)b, l, cap);
            b[l] = 0;
        }
        cJSON_free(v->valuestring);
        v->valuestring = b; /* cJSON frees it with cJSON_free == free (the default hooks) */
    } else if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && v->child) {
        int n = cJSON_GetArraySize(v), at = (int)(fz_rand(rs) % (unsigned)n);
        if (r < 3) cJSON_DeleteItemFromArray(v, at);
        else if (r < 6) {
            cJSON *dup = cJSON_Duplicate(cJSON_GetArrayItem(v, at), 1);
            if (dup && cJSON_IsArray(v)) cJSON_AddItemToArray(v, dup);
            else if (dup) cJSON_AddItemToObject(v, dup->string ? dup->string : "x", dup);
        } else if (n > 1) { /* one moved to the end */
            cJSON *a = cJSON_DetachItemFromArray(v, at);
            if (a && cJSON_IsArray(v)) cJSON_AddItemToArray(v, a);
            else if (a) cJSON_AddItemToObject(v, a->string ? a->string : "x", a);
        }
    } else if (cJSON_IsArray(v)) {
        cJSON_AddItemToArray(v, cJSON_CreateString(tokens[fz_rand(rs) % ntok]));
    } else if (cJSON_IsBool(v)) {
        v->type = (v->type & cJSON_True) ? cJSON_False : cJSON_True;
    }
}

static inline size_t fz_json_mutate(uint8_t *data, size_t size, size_t max, unsigned seed, const char *const *tokens,
                                    size_t ntok) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 5;
    cJSON *root = fz_rand(&rs) % 8 ? cJSON_ParseWithLength((const char *)data, size) : NULL;
    if (!root) return LLVMFuzzerMutate(data, size, max);
    int times = 1 + (int)(fz_rand(&rs) % 3);
    for (int i = 0; i < times; i++) {
        cJSON *all[512];
        size_t n = fz_json_list(root, all, 0, 512);
        fz_json_change(root, all[fz_rand(&rs) % n], &rs, tokens, ntok);
    }
    char *out = fz_rand(&rs) % 4 ? cJSON_PrintUnformatted(root) : cJSON_Print(root);
    cJSON_Delete(root);
    size_t len = out ? strlen(out) : 0;
    if (!out || len > max) {
        free(out);
        return LLVMFuzzerMutate(data, size, max);
    }
    memcpy(data, out, len);
    free(out);
    return len;
}

#endif

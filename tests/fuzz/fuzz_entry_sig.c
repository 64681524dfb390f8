/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_entry_sig.c — libFuzzer target: the signature trailer ([Note: signatures] in
 * src/entry/entry.c): kc_entry_sig_check, kc_entry_signer and kc_entry_decode of bytes with flag
 * bit 1 set, against a fixed keyring made once at start-up.
 *
 * The one idea: a signature the fuzzer cannot make must never verify.  The keyring (a folder in
 * a temporary directory, kc_keyring_load) holds two public keys: FZ_SIG_KEY's, a test key fixed
 * here so the seeds (real entries signed with it: tools/fuzz_seeds.sh) verify and the fuzzer
 * starts past the checks; and a key made by kc_sign_keygen at start-up, whose private key signs
 * nothing.  The first input byte picks a mode:
 *   even: the rest is an entry as stored.  Whatever the fuzzer did, if kc_entry_sig_check takes
 *         it, the signer must be FZ_SIG_KEY and signing the bytes again (Ed25519 is deterministic)
 *         must give exactly them — else the fuzzer forged a signature (abort).  What verifies is
 *         decoded and walked (fz_consume), as the tiers do after the check.
 *   odd:  pos:u32 xor:u8, then an entry: the harness makes its checksums right (fz_fix_entry),
 *         signs it with FZ_SIG_KEY (it must then verify), decodes it, then flips the byte at
 *         pos % len by xor (0 counts as 1) — a signed byte or the signature itself — and the
 *         result must be refused (abort otherwise) and decode without a crash.
 * The custom mutator (mutate_entry.h) changes the entry's structure and makes its checksums right;
 * in even mode it then signs it with FZ_SIG_KEY (one time in four it leaves the old trailer), so
 * structured mutations reach the decoder behind a signature that verifies; the mode and the
 * flip are mutated raw one time in sixteen.
 * FZ_SIG_KEY is a test key: nothing trusts it outside this target.  Must not: abort on anything
 * the library may refuse; only a crash, a sanitizer report or a broken invariant is a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mutate_entry.h"
#include "kcache/sign.h"

/* tools/fuzz_seeds.sh reads this line to sign the seeds: keep it one line. */
#define FZ_SIG_KEY \
    "kcache-ed25519-private 1 cfad9b9e25a6baf9 ebad738f90f519488e67d121ad7e4aa19f706e2b41b58e0e9d76ecabd4371591"
#define FZ_SIG_PUB \
    "kcache-ed25519-public 1 cfad9b9e25a6baf9 274791371f29676287201833019964c47c6f18dc9b414c25d80bb8fb0aa090b1"
#define FZ_SIG_ID "cfad9b9e25a6baf9"

static kc_signer *signer;
static kc_keyring *ring;

static void put_file(const char *path, const char *text, unsigned mode) {
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0 || chmod(path, mode) != 0) abort();
}

/* The fixed keyring and signer, once per process; aborts only if the machine cannot make them. */
static void fz_keys(void) {
    if (ring) return;
    char tmpl[] = "/tmp/kcfuzz-sig-XXXXXX", p[128];
    char *d = mkdtemp(tmpl);
    if (!d) abort();
    snprintf(p, sizeof p, "%s/ring", d);
    if (mkdir(p, 0700) != 0) abort();
    snprintf(p, sizeof p, "%s/fixed.key", d);
    put_file(p, FZ_SIG_KEY, 0600);
    if (kc_signer_load(&signer, p) != KC_OK) abort();
    snprintf(p, sizeof p, "%s/ring/fixed.pub", d);
    put_file(p, FZ_SIG_PUB, 0644);
    snprintf(p, sizeof p, "%s/ring/fresh", d); /* fresh.key (never used to sign), fresh.pub */
    if (kc_sign_keygen(p, NULL) != KC_OK) abort();
    snprintf(p, sizeof p, "%s/ring", d);
    if (kc_keyring_load(&ring, p) != KC_OK || kc_keyring_count(ring) != 2) abort();
    if (strcmp(kc_signer_key_id(signer), FZ_SIG_ID) != 0) abort();
}

static void decode_walk(const uint8_t *p, size_t n) {
    kc_entry *e = NULL;
    int rc = kc_entry_decode(&e, p, n);
    fz_say("decode", rc);
    if (rc == KC_OK) fz_consume(e);
    kc_entry_free(e);
}

/* Even mode: the bytes as stored. */
static void as_stored(const uint8_t *data, size_t size) {
    char id[2 * KC_SIGN_KEY_ID_LEN + 1], who[2 * KC_SIGN_KEY_ID_LEN + 1];
    (void)kc_entry_signer(data, size, who);
    int rc = kc_entry_sig_check(data, size, ring, id);
    fz_say("sig_check", rc);
    if (rc != KC_OK) return;
    if (strcmp(id, FZ_SIG_ID) != 0 || strcmp(who, id) != 0) {
        fprintf(stderr, "fuzz_entry_sig: verified under key %s (says %s), which signed nothing\n", id, who);
        abort();
    }
    void *again = malloc(size);
    size_t alen = size;
    if (!again) return;
    memcpy(again, data, size);
    if (kc_entry_sign(&again, &alen, signer) != KC_OK || alen != size || memcmp(again, data, size) != 0) {
        fprintf(stderr, "fuzz_entry_sig: %zu bytes verified that FZ_SIG_KEY did not sign\n", size);
        abort();
    }
    free(again);
    decode_walk(data, size);
}

/* Odd mode: sign, then flip one byte. */
static void sign_then_flip(const uint8_t *data, size_t size) {
    if (size < 5) return;
    uint32_t pos = fz_rd32(data);
    uint8_t x = data[4] ? data[4] : 1;
    size_t n = size - 5;
    void *p = malloc(n ? n : 1);
    if (!p) return;
    memcpy(p, data + 5, n);
    fz_fix_entry(p, n);
    if (kc_entry_sign(&p, &n, signer) != KC_OK) { /* not an entry's shape: refused, fine */
        free(p);
        return;
    }
    int rc = kc_entry_sig_check(p, n, ring, NULL);
    if (rc != KC_OK) {
        fprintf(stderr, "fuzz_entry_sig: an entry just signed is refused: %s\n", kc_error_last()->message);
        abort();
    }
    decode_walk(p, n);
    uint8_t *b = p;
    size_t at = pos % n;
    b[at] ^= x;
    if (kc_entry_sig_check(p, n, ring, NULL) == KC_OK) {
        fprintf(stderr, "fuzz_entry_sig: byte %zu of %zu flipped by 0x%02x and the signature still verifies\n", at, n,
                x);
        abort();
    }
    decode_walk(p, n);
    free(p);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    fz_keys();
    size_t pre = size >= 1 && (data[0] & 1) ? 5 : 1;
    if (size <= pre || seed % 16 == 0) return LLVMFuzzerMutate(data, size, max);
    size_t n = pre + fz_entry_mutate(data + pre, size - pre, max - pre, seed / 16);
    if (pre == 1 && seed % 4 != 1) { /* signed again: the trailer verifies */
        void *p = malloc(n - 1);
        size_t len = n - 1;
        if (p && (memcpy(p, data + 1, len), kc_entry_sign(&p, &len, signer)) == KC_OK && len + 1 <= max) {
            memcpy(data + 1, p, len);
            n = len + 1;
        }
        free(p);
        kc_error_clear();
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_keys();
    if (size < 1) return 0;
    if (data[0] & 1) sign_then_flip(data + 1, size - 1);
    else as_stored(data + 1, size - 1);
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit_fan.h — the opens of the toolkit's files by this process alone (fanotify), for the
 * watch of a compile ([Note: only our own reads] in toolkit_fan.c).  Internal to src/compile/.
 */
#ifndef KC_COMPILE_TOOLKIT_FAN_H
#define KC_COMPILE_TOOLKIT_FAN_H

#include <stddef.h>

typedef struct kc_tk_fan kc_tk_fan;

/* A watch of the opens of the files directly in each of `n` folders (`path` writes folder i's path
 * into out[cap]; nonzero: none), counting this process's opens only.  NULL when fanotify cannot
 * give that (an old kernel, a sandbox that forbids it, a folder it cannot mark or name): the
 * caller watches with inotify instead. */
kc_tk_fan *kc_tk_fan_open(size_t n, int (*path)(void *ctx, size_t i, char *out, size_t cap), void *ctx);

/* Each open by this process queued since the last drain: on_open(ctx, folder index, name).  1
 * when the queue is empty; 0 when the opens cannot be known whole from now on (the queue
 * overflowed, an event of a folder not marked, a process other than the one that opened the watch,
 * on_open returned 0). */
int kc_tk_fan_drain(kc_tk_fan *f, int (*on_open)(void *ctx, size_t dir, const char *name), void *ctx);

/* NULL: nothing. */
void kc_tk_fan_close(kc_tk_fan *f);

/* For the tests: 0 makes every kc_tk_fan_open return NULL (the inotify watch); 1 as built. */
void kc_tk_fan_enable_(int on);

#endif

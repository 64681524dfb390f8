/* SPDX-License-Identifier: Apache-2.0 */
/*
 * empty.c — kcache-empty: the process floor of kcache-bench's warm start as processes (procs.c):
 * a C program that does nothing, so a fresh process of it costs exec, the dynamic loader and
 * libc's start, and no more.
 */
int main(void) { return 0; }

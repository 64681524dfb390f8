/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/pch_dir.c — the lifetime of a process's PCH folder ([Note: precompiled headers] in
 * pch.c): the lock its owner holds, and the sweep that removes the folders whose owner is gone.
 *
 * The one idea: a process holds an flock on its own PCH folder for as long as it lives, and the
 * kernel lets go of it however the process ends (exit, a signal, SIGKILL).  So a folder whose lock
 * another process can take has no owner left, whatever the pid in its name says: in another PID
 * namespace sharing /tmp (two containers) that pid may be a live process's, or a dead one's name
 * a live process of this namespace.  The sweep removes a folder of this user only when the pid of
 * its name is gone here and it takes the folder's lock without waiting — and removes it holding the
 * lock, so an owner that had just made it and takes its lock after finds it gone and makes none.
 *
 * Callers: compile/pch.c (dir_make: kc_pch_dir_lock_, kc_pch_sweep_; kc_pch_cleanup_:
 * kc_pch_remove_dir_), tests (kc_pch_sweep_).  Must not: follow a link, enter another user's
 * folder, remove a folder whose lock it could not take (a lock it cannot ask for is "held": when
 * in doubt, keep), or wait for a lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/internal.h"
#include "pch.h"

/* Remove the files of the folder open as `fd` (never following a link, never into a folder); fd is
 * left open. */
static void remove_files_at(int fd) {
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC,
                       0); /* fdopendir owns what it is given; fd (and its lock) stay the caller's */
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
    closedir(d);
}

void kc_pch_remove_dir_(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    remove_files_at(fd);
    close(fd);
    rmdir(dir);
}

int kc_pch_dir_lock_(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rmdir(dir);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int held = errno == EWOULDBLOCK;
        kc_log(KC_LOG_COMPILE, "pch: no lock on %s (%s)%s", dir, strerror(errno),
               held ? ": a sweep is removing it" : ": kept without one");
        if (held) { /* a sweep took it between mkdtemp and here: it removes the folder */
            close(fd);
            return -1;
        }
        return fd; /* a file system without flock: the folder lives as before, pid-checked only */
    }
    struct stat a, b; /* still the folder made: not removed by a sweep that let go before the lock */
    if (fstat(fd, &a) != 0 || lstat(dir, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The folder `name` under the parent open as `pfd`, whose process is gone: removed when it is a
 * folder (never a link) of this user whose lock this process takes without waiting. */
static void sweep_one(int pfd, const char *parent, const char *name) {
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        close(fd);
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) { /* held: its owner lives (in another PID namespace) */
        kc_log(KC_LOG_COMPILE, "pch: kept %s/%s (its lock is held: %s)", parent, name, strerror(errno));
        close(fd);
        return;
    }
    remove_files_at(fd);
    unlinkat(pfd, name, AT_REMOVEDIR);
    close(fd); /* the lock goes with it */
    kc_log(KC_LOG_COMPILE, "pch: removed %s/%s (its process is gone)", parent, name);
}

void kc_pch_sweep_(const char *parent) {
    DIR *d = opendir(parent);
    if (!d) return;
    char pre[64];
    int pl = snprintf(pre, sizeof pre, "kcache-pch-%lu-", (unsigned long)getuid());
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, pre, (size_t)pl) != 0) continue;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (end == e->d_name + pl || *end != '-' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive here, or not ours to know */
        sweep_one(dirfd(d), parent, e->d_name);
    }
    closedir(d);
}

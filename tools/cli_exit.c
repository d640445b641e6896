/*
 * cli_exit.c - the program's exit where it opened a GPU. The NVIDIA driver tears a process's
 * CUDA contexts down when the process's last file of /dev/nvidia* closes, i.e. inside its
 * exit: after the outputs were complete, the exit took another 140-200 ms on 2 x H200 (a CPU
 * run's 10-15; _exit instead of exit gained nothing: the time is the kernel's; BENCHMARKS Z6).
 * So a child keeps the driver's files and nothing else, the program exits at once with its
 * code, and the teardown happens when the child exits, after its parent is gone (issue 31:
 * a run whose work is done does not wait for CUDA to close).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "es_trace.h"

/* The driver's files. test_cli_exit compiles this file with a prefix of its own, so that the
 * child's handling of the descriptors is tested where no GPU is. */
#ifndef CLI_EXIT_DRIVER
#define CLI_EXIT_DRIVER "/dev/nvidia"
#endif

/* Calls /proc/self/fd's entries' fn(fd, is_driver_file); raw system calls only, as the child
 * of a threaded process may call nothing that could take a lock (malloc, opendir). */
static void each_fd(void (*fn)(int fd, int driver, void *arg), void *arg) {
  char buf[4096], link[64], target[64];
  const int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const struct dirent64 *e = (const struct dirent64 *)(buf + off);
      off += e->d_reclen;
      int fd = 0;
      const char *p = e->d_name;
      if (*p < '0' || *p > '9') continue;
      while (*p >= '0' && *p <= '9')
        fd = fd * 10 + (*p++ - '0');
      if (fd == dir) continue;
      /* "/proc/self/fd/N" by hand (snprintf may lock) */
      char num[16];
      int k = 0;
      for (int v = fd; k == 0 || v; v /= 10)
        num[k++] = (char)('0' + v % 10);
      size_t len = 0;
      memcpy(link, "/proc/self/fd/", 14);
      len = 14;
      while (k)
        link[len++] = num[--k];
      link[len] = '\0';
      const ssize_t t = readlink(link, target, sizeof target - 1);
      target[t > 0 ? t : 0] = '\0';
      fn(fd, t > 0 && !strncmp(target, CLI_EXIT_DRIVER, sizeof CLI_EXIT_DRIVER - 1), arg);
    }
  }
  close(dir);
}

static void count_driver(int fd, int driver, void *arg) {
  (void)fd;
  *(int *)arg += driver;
}

static void close_other(int fd, int driver, void *arg) {
  (void)arg;
  if (!driver) close(fd);
}

void cli_exit(int code) {
  int driver = 0;
  each_fd(count_driver, &driver);
  if (!driver) return; /* no GPU opened: the usual exit */
  es_trace("exit: the driver's files left to a child");
  fflush(NULL);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    /* Nothing but the driver's files: a pipe's reader sees its end when the parent exits. */
    each_fd(close_other, NULL);
    /* nanosleep, not usleep: only the former is async-signal-safe (POSIX.1-2008) */
    const struct timespec ms = {0, 1000000L};
    for (int i = 0; i < 60000 && getppid() == parent; i++)
      nanosleep(&ms, NULL);
    _exit(0);
  }
  /* The parent, at once; where fork failed, with the driver's teardown as before (either
   * way without the atexit handlers: the outputs are complete). */
  _exit(code);
}

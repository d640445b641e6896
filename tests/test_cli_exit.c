/*
 * test_cli_exit.c - the CLI's exit where it opened a GPU (tools/cli_exit.c), compiled in with
 * a driver prefix of its own, so that it runs where no GPU is: a file under /tmp stands for
 * /dev/nvidia*. Checks the child's descriptor loop (every descriptor but the driver's closed,
 * also where /proc/self/fd takes several reads and is read while descriptors close), and the
 * whole exit in a threaded process: the run's exit code, its buffered output flushed, a pipe's
 * reader ending at once, the child ending once its parent is gone, and no fork at all where
 * no driver file is open.
 */
#define CLI_EXIT_DRIVER "/tmp/es-test-cli-exit-drv."
#include "../tools/cli_exit.c"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "es_test.h"

static char g_drv[64]; /* CLI_EXIT_DRIVER and this process's id */

static void *idle_main(void *arg) { /* a second thread: the process is threaded, as the CLI */
  (void)arg;
  for (;;) pause();
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* In a child of its own (it closes its descriptors): n copies of /dev/null between two driver
 * files, then the child's loop. Exit 0: exactly the driver's left; bit 1: a driver file
 * closed; bit 2: another left open; bit 4: the setup failed; bit 8: miscounted. */
static int fd_loop_status(int n) {
  fflush(NULL); /* this process's buffered lines are not the child's to write */
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int bad = 0, top = 0;
    const int d1 = open(g_drv, O_RDONLY);
    const int nul = open("/dev/null", O_RDONLY);
    if (d1 < 0 || nul < 0) _exit(4);
    for (int i = 0; i < n; i++) {
      const int fd = dup(nul);
      if (fd < 0) _exit(4);
      if (fd > top) top = fd;
    }
    const int d2 = open(g_drv, O_RDONLY); /* the last entries: a later read of the directory */
    if (d2 < 0) _exit(4);
    if (d2 > top) top = d2;
    int driver = 0;
    each_fd(count_driver, &driver);
    if (driver != 2) bad |= 8;
    each_fd(close_other, NULL);
    for (int fd = 0; fd <= top + 8; fd++) {
      const int open_now = fcntl(fd, F_GETFD) != -1;
      if (fd == d1 || fd == d2)
        bad |= open_now ? 0 : 1;
      else
        bad |= open_now ? 2 : 0;
    }
    _exit(bad);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

/* The whole exit: a child process P with a second thread, its standard output a pipe (and
 * two more copies of it), a driver file open, some output still buffered, calls
 * cli_exit(code). with_driver 0: no driver file (cli_exit returns; P exits 99). */
static void whole_exit(int with_driver, int code) {
  int pfd[2];
  CHECK(pipe(pfd) == 0, "pipe");
  fflush(NULL); /* this process's buffered lines are not the child's to write */
  const pid_t pid = fork();
  if (pid == 0) {
    pthread_t t;
    if (dup2(pfd[1], 1) < 0 || dup(1) < 0 || dup(1) < 0) _exit(98);
    close(pfd[0]);
    close(pfd[1]);
    if (with_driver && open(g_drv, O_RDONLY) < 0) _exit(98);
    if (pthread_create(&t, NULL, idle_main, NULL) != 0) _exit(98);
    printf("the outputs are complete"); /* buffered: the exit must flush it */
    cli_exit(code);
    fflush(stdout);
    _exit(99);
  }
  CHECK(pid > 0, "fork");
  close(pfd[1]);
  /* The pipe's reader: everything, then its end, long before the child's 60 s bound. */
  char got[256];
  size_t len = 0;
  const double t0 = now_s();
  int eof = 0;
  while (now_s() - t0 < 20) {
    struct pollfd p = {pfd[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    const ssize_t r = read(pfd[0], got + len, sizeof got - 1 - len);
    if (r <= 0) {
      eof = 1;
      break;
    }
    len += (size_t)r;
  }
  got[len] = '\0';
  const double waited = now_s() - t0;
  close(pfd[0]);
  CHECK(eof, "driver %d: the pipe's reader saw no end in %.1f s", with_driver, waited);
  CHECK(!strcmp(got, "the outputs are complete"), "driver %d: read '%s'", with_driver, got);
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "driver %d: the process's end", with_driver);
  const int want = with_driver ? code : 99, got_code = WEXITSTATUS(st);
  CHECK(got_code == want, "driver %d: exit %d, want %d", with_driver, got_code, want);
  /* This process is the subreaper: the child that kept the driver's files comes here once
   * its parent is gone, and ends by itself with 0. */
  int children = 0;
  for (const double t1 = now_s(); now_s() - t1 < 20;) {
    const pid_t c = waitpid(-1, &st, WNOHANG);
    if (c > 0) {
      children++;
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "driver %d: the child's end", with_driver);
      continue;
    }
    if (c < 0 && errno == ECHILD) break;
    usleep(5000);
  }
  CHECK(children == (with_driver ? 1 : 0), "driver %d: %d children", with_driver, children);
  printf("exit (driver file %s): code %d, the pipe's end after %.0f ms, %d child\n",
         with_driver ? "open" : "none", got_code, waited * 1e3, children);
}

int main(void) {
  snprintf(g_drv, sizeof g_drv, "%s%d", CLI_EXIT_DRIVER, (int)getpid());
  const int fd = open(g_drv, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    printf("test_cli_exit: cannot create %s, skipped\n", g_drv);
    return ES_TEST_SKIP;
  }
  close(fd);
  if (access("/proc/self/fd", R_OK) != 0) {
    unlink(g_drv);
    printf("test_cli_exit: no /proc/self/fd, skipped\n");
    return ES_TEST_SKIP;
  }
  /* Room for the descriptors: a read of /proc/self/fd (4096 bytes) holds ~170 entries. */
  struct rlimit rl;
  int n = 900;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur < 1024 && rl.rlim_max >= 1024) {
      rl.rlim_cur = 1024;
      setrlimit(RLIMIT_NOFILE, &rl);
      getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)n + 64 > rl.rlim_cur) n = (int)rl.rlim_cur - 64;
  }
  CHECK(n > 400, "only %d descriptors: not several reads of the directory", n);
  for (int k = 0; k < 3; k++) {
    const int nk = k == 0 ? 3 : k == 1 ? 200 : n;
    const int st = fd_loop_status(nk);
    CHECK(st == 0, "%d descriptors: status %d (1 a driver file closed, 2 another left, 4 setup, "
          "8 miscounted)", nk, st);
  }
  printf("the child's loop: %d descriptors closed, the driver's 2 kept\n", n);
  CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "subreaper");
  whole_exit(1, 7);
  whole_exit(1, 0);
  whole_exit(0, 7);
  unlink(g_drv);
  if (es_test_failures) {
    fprintf(stderr, "test_cli_exit: %d failure(s)\n", es_test_failures);
    return 1;
  }
  printf("test_cli_exit: ok\n");
  return 0;
}

/*
 * test_io_atomic.c - atomic outputs: a completed write appears under its final name only at
 * commit; an existing file is refused without overwrite; a missing or unwritable directory
 * and a write failure (file size limit, as a full disk) give ES_ERR_OUTPUT with the system's
 * reason and leave neither a final file nor a temporary behind. A FIFO is written in place
 * and a link written through; temporaries of names up to NAME_MAX fit NAME_MAX.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "es_io.h"
#include "es_test.h"

/* Number of entries in dir (besides . and ..). */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static int file_is(const char *path, const char *content) {
  char buf[256] = "";
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return !strcmp(buf, content);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Tracks and untracks names of its own, as threads committing outputs do, with TRACK_LIVE of
 * them live at a time (an untrack then passes other threads' live slots, as in the CLI),
 * from a barrier until a shared deadline: all threads overlap for the whole time, however
 * they are scheduled. (100000 rounds each, started one by one, often ran mostly alone on 2
 * cores: the bug below was caught in 6 runs of 10; this way 30 of 30, in 0.3 s.) */
enum { TRACK_LIVE = 4 };

/* Names that say whether they were read whole: "/nonexistent/.es-walk-T-I-" then a letter
 * of (T, I) many times, then "-I-T", for tracking thread T's I-th temporary. A name read
 * while another is copied over it mixes the two and fails walk_name_ok. */
enum { WALK_FILL = 180, WALK_NAME = 256 };
static void walk_name(char *buf, int t, long i) {
  int k = snprintf(buf, WALK_NAME, "/nonexistent/.es-walk-%d-%08ld-", t, i);
  memset(buf + k, 'a' + (int)((t * 7 + i) % 26), WALK_FILL);
  snprintf(buf + k + WALK_FILL, (size_t)(WALK_NAME - k - WALK_FILL), "-%08ld-%d", i, t);
}
static _Atomic long walk_tracked[8]; /* per thread: how many names it has tracked */
static int walk_name_ok(const char *name) {
  int t, t2, n = 0;
  long i, i2;
  char want[WALK_NAME];
  if (sscanf(name, "/nonexistent/.es-walk-%d-%ld-%n", &t, &i, &n) != 2 || t < 0 || t >= 8)
    return 0;
  if (i < 0 || i >= atomic_load(&walk_tracked[t])) return 0; /* never tracked */
  if (sscanf(name + n + WALK_FILL, "-%ld-%d", &i2, &t2) != 2 || i2 != i || t2 != t) return 0;
  walk_name(want, t, i);
  return !strcmp(name, want);
}

typedef struct track_arg {
  int id;
  int walk; /* names walk_name makes (and walk_tracked counts), else short ones */
  pthread_barrier_t *start;
  const double *end_at; /* CLOCK_MONOTONIC seconds, set before the barrier opens */
} track_arg;
static void *track_main(void *p) {
  const track_arg *t = p;
  static _Thread_local char names[TRACK_LIVE][WALK_NAME];
  pthread_barrier_wait(t->start);
  const double end = *t->end_at;
  long i = 0;
  for (; (i & 255) || mono_s() < end; i++) {
    char *name = names[i % TRACK_LIVE];
    if (i >= TRACK_LIVE) es_tmp_untrack(name);
    if (t->walk) {
      walk_name(name, t->id, i);
      atomic_store(&walk_tracked[t->id], i + 1);
    } else {
      snprintf(name, WALK_NAME, "/nonexistent/.es-track-%d-%ld", t->id, i);
    }
    es_tmp_track(name);
  }
  for (long k = 0; k < TRACK_LIVE && k < i; k++)
    es_tmp_untrack(names[k]);
  return NULL;
}
/* What a walk saw: each name copied byte by byte, slowly, as a long unlink reads its path. */
typedef struct walk_seen {
  long seen, bad;
  char first_bad[WALK_NAME + 1];
} walk_seen;
static void walk_record(const char *name, void *arg) {
  walk_seen *w = arg;
  char copy[WALK_NAME + 1];
  size_t k = 0;
  for (; k < WALK_NAME && name[k]; k++) {
    copy[k] = name[k];
    for (volatile int spin = 0; spin < 20; spin++) {
    }
  }
  copy[k] = 0;
  w->seen++;
  if (!walk_name_ok(copy) && w->bad++ == 0) memcpy(w->first_bad, copy, k + 1);
}

/* Starts nt threads running track_main (walk names or not), each waiting at `start` (made
 * here for nt + 1: the caller is the last to arrive) until *end_at is set. Returns how many
 * started; where that is fewer than nt, those started wait at the barrier for good and the
 * test ends. */
static int start_trackers(pthread_t *th, track_arg *ta, int nt, pthread_barrier_t *start,
                          const double *end_at, int walk) {
  int started = 0;
  pthread_barrier_init(start, NULL, (unsigned)nt + 1);
  for (int i = 0; i < nt; i++) {
    ta[i].id = i;
    ta[i].walk = walk;
    ta[i].start = start;
    ta[i].end_at = end_at;
    if (pthread_create(&th[i], NULL, track_main, &ta[i]) != 0) break;
    started++;
  }
  if (started != nt) fprintf(stderr, "FAIL: only %d tracking threads started\n", started);
  return started;
}

int main(void) {
  es_test_seed("test_io_atomic");
  char msg[256], path[700], dir[] = "/tmp/es_test_io_atomic.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  es_atomic a;

  /* commit: nothing under the final name until the rename, one file after */
  snprintf(path, sizeof path, "%s/out.png", dir);
  CHECK(es_atomic_open(&a, path, 0, msg, sizeof msg) == ES_OK, "open: %s", msg);
  CHECK(a.tmp_path && strncmp(a.tmp_path, dir, strlen(dir)) == 0 && strstr(a.tmp_path, "/.out.png.tmp-"),
        "temporary %s not a hidden name in the same directory", a.tmp_path ? a.tmp_path : "(null)");
  fputs("first", a.fp);
  CHECK(access(path, F_OK) != 0, "final name exists before commit");
  CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "commit: %s", msg);
  CHECK(file_is(path, "first"), "content after commit");
  CHECK(count_entries(dir) == 1, "%d entries after commit", count_entries(dir));
  struct stat st;
  mode_t um = umask(022);
  umask(um);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~um), "mode %o, umask %o",
        st.st_mode & 0777, um);
  es_atomic_abort(&a); /* safe after commit */

  /* exists without overwrite: refused, old content kept, no temporary */
  CHECK(es_atomic_open(&a, path, 0, msg, sizeof msg) == ES_ERR_OUTPUT &&
            !strcmp(msg, "exists (use -y to overwrite)"),
        "no-overwrite: %s", msg);
  CHECK(file_is(path, "first") && count_entries(dir) == 1, "no-overwrite changed the directory");
  /* a file that appears between open and commit is not replaced without overwrite */
  {
    char other[800];
    snprintf(other, sizeof other, "%s/late.png", dir);
    CHECK(es_atomic_open(&a, other, 0, msg, sizeof msg) == ES_OK, "open late: %s", msg);
    fputs("ours", a.fp);
    FILE *o = fopen(other, "w");
    fputs("theirs", o);
    fclose(o);
    CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_ERR_OUTPUT && strstr(msg, "exists"),
          "late file replaced: %s", msg);
    CHECK(file_is(other, "theirs") && count_entries(dir) == 2, "late file changed");
    unlink(other);
  }
  /* overwrite */
  CHECK(es_atomic_open(&a, path, 1, msg, sizeof msg) == ES_OK, "overwrite open: %s", msg);
  fputs("second", a.fp);
  CHECK(file_is(path, "first"), "old content gone before commit");
  CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "overwrite commit: %s", msg);
  CHECK(file_is(path, "second") && count_entries(dir) == 1, "overwrite result");

  /* abort: the old file stays, the temporary goes */
  CHECK(es_atomic_open(&a, path, 1, msg, sizeof msg) == ES_OK, "open for abort: %s", msg);
  fputs("third", a.fp);
  es_atomic_abort(&a);
  es_atomic_abort(&a); /* twice is fine */
  CHECK(file_is(path, "second") && count_entries(dir) == 1, "abort left something");
  es_atomic zero;
  memset(&zero, 0, sizeof zero);
  es_atomic_abort(&zero);
  unlink(path);

  /* es_tmp_unlink_all (a second SIGINT's last act) removes the temporaries open now, and
   * only those: one committed or aborted before is not tracked any more. */
  {
    es_atomic b, c;
    char other[512];
    snprintf(other, sizeof other, "%s/other.png", dir);
    CHECK(es_atomic_open(&a, path, 0, msg, sizeof msg) == ES_OK, "open a: %s", msg);
    CHECK(es_atomic_open(&b, other, 0, msg, sizeof msg) == ES_OK, "open b: %s", msg);
    CHECK(es_atomic_commit(&b, msg, sizeof msg) == ES_OK, "commit b: %s", msg);
    CHECK(es_atomic_open(&c, other, 1, msg, sizeof msg) == ES_OK, "open c: %s", msg);
    es_atomic_abort(&c);
    CHECK(count_entries(dir) == 2, "%d entries with one temporary open", count_entries(dir));
    es_tmp_unlink_all();
    CHECK(count_entries(dir) == 1 && access(other, F_OK) == 0,
          "es_tmp_unlink_all: %d entries left, want the committed file only", count_entries(dir));
    es_atomic_abort(&a);
    es_tmp_unlink_all(); /* nothing tracked: nothing removed */
    CHECK(access(other, F_OK) == 0, "es_tmp_unlink_all removed a committed file");
    unlink(other);
  }

  /* Threads tracking and untracking at once leave no slot taken: every slot is free again,
   * so a full table's worth of temporaries is then tracked and es_tmp_unlink_all removes
   * them all. (es_tmp_untrack claimed each live slot it passed to compare its name; the
   * owner of a slot so claimed passed over it, and the slot stayed taken by a name long
   * gone: the table filled up, and later temporaries were left by a second SIGINT.) */
  {
    enum { NT = 8 };
    pthread_t th[NT];
    track_arg ta[NT];
    pthread_barrier_t start;
    double end_at = 0;
    const int started = start_trackers(th, ta, NT, &start, &end_at, 0);
    if (started != NT) return 1;
    end_at = mono_s() + 0.3; /* before the barrier: every thread reads it after */
    pthread_barrier_wait(&start);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    static char names[ES_TMP_TRACK_MAX][600];
    for (int i = 0; i < ES_TMP_TRACK_MAX; i++) {
      snprintf(names[i], sizeof names[i], "%s/.t%03d", dir, i);
      int fd = open(names[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) close(fd);
      es_tmp_track(names[i]);
    }
    es_tmp_unlink_all();
    CHECK(count_entries(dir) == 0,
          "after concurrent tracking, %d of %d temporaries were not removed (slots leaked)",
          count_entries(dir), ES_TMP_TRACK_MAX);
    for (int i = 0; i < ES_TMP_TRACK_MAX; i++) {
      es_tmp_untrack(names[i]);
      unlink(names[i]);
    }
  }

  /* The signal handler's walk (es_tmp_walk, recording in place of unlinking) run over and
   * over while threads track and untrack: every name it is given must be one tracked, whole.
   * A slot's name was a buffer rewritten in place by the next tracker of the slot, so a walk
   * that had seen the slot taken could read (and unlink) a mix of two names. */
  {
    enum { NT = 4 };
    pthread_t th[NT];
    track_arg ta[NT];
    pthread_barrier_t start;
    double end_at = 0;
    walk_seen w;
    memset(&w, 0, sizeof w);
    const int started = start_trackers(th, ta, NT, &start, &end_at, 1);
    if (started != NT) return 1;
    end_at = mono_s() + 0.5;
    pthread_barrier_wait(&start);
    while (mono_s() < end_at)
      es_tmp_walk(walk_record, &w);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    printf("walks beside trackers: %ld names seen, %ld not whole\n", w.seen, w.bad);
    CHECK(w.seen > 0, "the walks saw no name");
    CHECK(w.bad == 0, "%ld of %ld names a walk saw were never tracked (torn), first: %s", w.bad,
          w.seen, w.first_bad);
    long before = w.seen;
    es_tmp_walk(walk_record, &w);
    CHECK(w.seen == before, "%ld names still tracked after every thread untracked its own",
          w.seen - before);
  }

  /* a final name of 255 bytes (NAME_MAX) still gets a temporary */
  {
    char longname[1024];
    int k = snprintf(longname, sizeof longname, "%s/", dir);
    memset(longname + k, 'n', 251);
    memcpy(longname + k + 251, ".png", 5);
    CHECK(es_atomic_open(&a, longname, 0, msg, sizeof msg) == ES_OK, "255-byte name: %s", msg);
    es_atomic_commit(&a, msg, sizeof msg);
    CHECK(access(longname, F_OK) == 0 && count_entries(dir) == 1, "255-byte name not written");
    unlink(longname);
  }

  /* the temporary's name keeps a prefix of a long final name: within NAME_MAX (255) for
   * every tag, hidden, in the same directory (video's ".NAME.es-XXXXXX" was 9 bytes over) */
  for (int n = 1; n <= 255; n += 127) {
    char longname[1024];
    int k = snprintf(longname, sizeof longname, "%s/", dir);
    memset(longname + k, 'v', (size_t)n);
    longname[k + n] = 0;
    char *t = es_tmp_template(longname, "es");
    CHECK(t && strlen(t + k) <= 255 && t[k] == '.' && !strncmp(t, longname, (size_t)k) &&
              !strcmp(t + strlen(t) - 10, ".es-XXXXXX"),
          "%d-byte name: temporary %s", n, t ? t + k : "(null)");
    free(t);
  }
  /* a cut inside a UTF-8 character moves back to its first byte */
  {
    char name[300];
    memset(name, 'u', ES_TMP_NAME_KEEP - 1);
    memcpy(name + ES_TMP_NAME_KEEP - 1, "\xc3\xa9tail.png", 11);
    char *t = es_tmp_template(name, "tmp");
    CHECK(t && strlen(t) == 1 + ES_TMP_NAME_KEEP - 1 + 11 && t[ES_TMP_NAME_KEEP] == '.',
          "UTF-8 cut: %s", t ? t : "(null)");
    free(t);
  }

  /* outputs that are not regular files */
  {
    char fifo[800], lnk[800], target[800], sub[700], buf[64] = "";
    /* a FIFO is written in place, overwrite or not, and stays a FIFO */
    snprintf(fifo, sizeof fifo, "%s/f.png", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the open for writing returns */
    CHECK(es_atomic_open(&a, fifo, 0, msg, sizeof msg) == ES_OK && a.stream && !a.tmp_path,
          "FIFO open: %s", msg);
    if (a.fp) fputs("piped", a.fp);
    CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "FIFO commit: %s", msg);
    CHECK(read(rd, buf, sizeof buf - 1) == 5 && !strcmp(buf, "piped"), "FIFO reader got '%s'", buf);
    close(rd);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode) && count_entries(dir) == 1,
          "FIFO replaced or temporary left");
    CHECK(!es_output_exists(fifo), "a FIFO counts as an existing output");
    /* a link to it is followed to it */
    snprintf(lnk, sizeof lnk, "%s/l.png", dir);
    CHECK(symlink("f.png", lnk) == 0, "symlink");
    rd = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(es_atomic_open(&a, lnk, 1, msg, sizeof msg) == ES_OK && a.stream, "link to FIFO: %s",
          msg);
    CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "link to FIFO commit: %s", msg);
    close(rd);
    CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode), "link to FIFO replaced");
    unlink(lnk);
    unlink(fifo);
    /* a link to a file in another directory: the file is written (new, then replaced), the
     * link stays a link, the temporary goes next to the file */
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0700);
    snprintf(target, sizeof target, "%s/t.png", sub);
    CHECK(symlink("sub/t.png", lnk) == 0, "symlink");
    CHECK(!es_output_exists(lnk), "a link to nothing counts as existing");
    CHECK(es_atomic_open(&a, lnk, 0, msg, sizeof msg) == ES_OK && a.tmp_path &&
              !strncmp(a.tmp_path, sub, strlen(sub)),
          "dangling link: %s, temporary %s", msg, a.tmp_path ? a.tmp_path : "(null)");
    if (a.fp) fputs("one", a.fp);
    CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "dangling link commit: %s", msg);
    CHECK(file_is(target, "one") && lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode),
          "dangling link: target not written or link replaced");
    CHECK(es_output_exists(lnk), "a link to a file does not count as existing");
    CHECK(es_atomic_open(&a, lnk, 0, msg, sizeof msg) == ES_ERR_OUTPUT && strstr(msg, "exists"),
          "link without overwrite: %s", msg);
    CHECK(es_atomic_open(&a, lnk, 1, msg, sizeof msg) == ES_OK, "link overwrite: %s", msg);
    if (a.fp) fputs("two", a.fp);
    CHECK(es_atomic_commit(&a, msg, sizeof msg) == ES_OK, "link overwrite commit: %s", msg);
    CHECK(file_is(target, "two") && lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode) &&
              count_entries(sub) == 1,
          "link overwrite: target not rewritten, link replaced or temporary left");
    unlink(target);
    unlink(lnk);
    rmdir(sub);
    /* a loop of links: refused, nothing created */
    snprintf(target, sizeof target, "%s/m.png", dir);
    CHECK(symlink("m.png", lnk) == 0 && symlink("l.png", target) == 0, "symlinks");
    CHECK(es_atomic_open(&a, lnk, 1, msg, sizeof msg) == ES_ERR_OUTPUT &&
              strstr(msg, "symbolic links"),
          "loop of links: %s", msg);
    unlink(lnk);
    unlink(target);
    CHECK(count_entries(dir) == 0, "%d entries left by the link cases", count_entries(dir));
  }

  /* a directory as the output name */
  CHECK(es_atomic_open(&a, dir, 1, msg, sizeof msg) == ES_ERR_OUTPUT && strstr(msg, "directory"),
        "directory: %s", msg);

  /* missing directory */
  snprintf(path, sizeof path, "%s/no/such/dir/out.png", dir);
  CHECK(es_atomic_open(&a, path, 0, msg, sizeof msg) == ES_ERR_OUTPUT &&
            strstr(msg, "No such file or directory"),
        "missing dir: %s", msg);
  CHECK(count_entries(dir) == 0, "missing dir left %d entries", count_entries(dir));

  /* unwritable directory: root ignores permissions, so only as another user */
  char ro[600];
  snprintf(ro, sizeof ro, "%s/ro", dir);
  mkdir(ro, 0500);
  snprintf(path, sizeof path, "%s/out.png", ro);
  if (geteuid() != 0) {
    CHECK(es_atomic_open(&a, path, 0, msg, sizeof msg) == ES_ERR_OUTPUT &&
              strstr(msg, "Permission denied"),
          "read-only dir: %s", msg);
    CHECK(count_entries(ro) == 0, "read-only dir has entries");
  } else {
    printf("running as root: permission case skipped\n");
  }
  rmdir(ro);
  /* a read-only filesystem refuses even root */
  CHECK(es_atomic_open(&a, "/proc/es_test_out.png", 0, msg, sizeof msg) == ES_ERR_OUTPUT,
        "/proc: %s", msg);
  printf("/proc: %s\n", msg);

  /* a write that fails (file size limit: EFBIG, as ENOSPC would on a full disk) through
   * each writer: ES_ERR_OUTPUT, no final file, no temporary */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 10000;
  if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
    int w = es_test_range(300, 400), h = es_test_range(300, 400);
    uint8_t *px = malloc((size_t)w * h * 3);
    float *map = malloc(sizeof(float) * w * h);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) px[i] = (uint8_t)es_test_rand();
    for (size_t i = 0; i < (size_t)w * h; i++) map[i] = (float)(es_test_rand() % 1000) / 250.0f;
    snprintf(path, sizeof path, "%s/big.png", dir);
    int s = es_png_write(path, 0, w, h, ES_PIX_RGB24, px, 0, msg, sizeof msg);
    CHECK(s == ES_ERR_OUTPUT && strstr(msg, "too large"), "png over the size limit: %d %s", s, msg);
    printf("png write failure: %s\n", msg);
    CHECK(count_entries(dir) == 0, "png write failure left %d entries", count_entries(dir));
    snprintf(path, sizeof path, "%s/big.npy", dir);
    s = es_npy_write(path, 0, w, h, map, 0, msg, sizeof msg);
    CHECK(s == ES_ERR_OUTPUT, "npy over the size limit: %d %s", s, msg);
    CHECK(count_entries(dir) == 0, "npy write failure left %d entries", count_entries(dir));
    es_npy_stream *ns = NULL;
    s = es_npy_stream_open(&ns, path, 0, w, h, msg, sizeof msg);
    CHECK(s == ES_OK, "npy stream open: %s", msg);
    int ws = ES_OK;
    for (int i = 0; i < 3 && ws == ES_OK; i++) ws = es_npy_stream_write(ns, map, 0, msg, sizeof msg);
    CHECK(ws == ES_ERR_OUTPUT, "npy stream write over the limit: %d %s", ws, msg);
    s = es_npy_stream_close(&ns, 1, msg, sizeof msg);
    CHECK(s == ES_ERR_OUTPUT && ns == NULL, "npy stream close after failure: %d %s", s, msg);
    CHECK(count_entries(dir) == 0, "npy stream failure left %d entries", count_entries(dir));
    /* stats: records until the limit, then the commit must fail */
    snprintf(path, sizeof path, "%s/big.csv", dir);
    es_stats_writer *sw = NULL;
    s = es_stats_writer_open(&sw, path, 0, 16, msg, sizeof msg);
    CHECK(s == ES_OK, "stats open: %s", msg);
    es_stats stt;
    memset(&stt, 0, sizeof stt);
    stt.bins = 16;
    stt.mean = 1.0 / 3.0;
    for (int i = 0; i < 1000 && s == ES_OK; i++)
      s = es_stats_writer_add(sw, "a-rather-long-file-name-for-the-record.png", i, i * 0.04, w, h,
                              &stt, msg, sizeof msg);
    if (s == ES_OK) s = es_stats_writer_close(&sw, 1, msg, sizeof msg);
    else es_stats_writer_close(&sw, 0, msg, sizeof msg);
    CHECK(s == ES_ERR_OUTPUT, "stats over the limit: %d %s", s, msg);
    CHECK(count_entries(dir) == 0, "stats failure left %d entries", count_entries(dir));
    setrlimit(RLIMIT_FSIZE, &old);
    free(px);
    free(map);
  } else {
    printf("setrlimit(RLIMIT_FSIZE) refused: write-failure cases skipped\n");
  }

  /* ES_WRITE_KEEP (-n): an existing name is kept (ES_WRITE_KEPT, no temporary), and so is
   * one that appears between the open and the commit (a concurrent run's): the temporary
   * goes, the other file stays, ES_WRITE_KEPT rather than "exists" (ES_ERR_OUTPUT). */
  {
    char kdir[600];
    snprintf(kdir, sizeof kdir, "%s/keep", dir);
    CHECK(mkdir(kdir, 0755) == 0, "mkdir %s", kdir);
    snprintf(path, sizeof path, "%s/k.png", kdir);
    CHECK(es_atomic_open(&a, path, ES_WRITE_KEEP, msg, sizeof msg) == ES_OK, "keep open: %s", msg);
    fputs("mine", a.fp);
    FILE *other = fopen(path, "wb"); /* another run renames its file into place first */
    if (other) {
      fputs("theirs", other);
      fclose(other);
    }
    int s = es_atomic_commit(&a, msg, sizeof msg);
    CHECK(s == ES_WRITE_KEPT, "keep: a file that appeared meanwhile: %d %s", s, msg);
    CHECK(file_is(path, "theirs") && count_entries(kdir) == 1, "keep: %d entries, content %s",
          count_entries(kdir), file_is(path, "theirs") ? "theirs" : "changed");
    s = es_atomic_open(&a, path, ES_WRITE_KEEP, msg, sizeof msg);
    CHECK(s == ES_WRITE_KEPT && count_entries(kdir) == 1, "keep: an existing name: %d %s", s, msg);
    unlink(path);
    rmdir(kdir);
  }

  /* A directory that becomes unwritable while a file is written (a batch whose output
   * directory went 555, or read-only): the rename fails, the temporary cannot be removed
   * either, and the message names it (it said only "cannot rename into place"). Permissions
   * do not stop root, so the directory is made read-only by a read-only bind mount over it,
   * in a mount namespace of a child's own; where that is refused the case is skipped. */
  {
    char rdir[600];
    snprintf(rdir, sizeof rdir, "%s/ro", dir);
    CHECK(mkdir(rdir, 0755) == 0, "mkdir %s", rdir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      char p2[700], m2[1024];
      es_atomic b;
      snprintf(p2, sizeof p2, "%s/p16.png", rdir);
      if (es_atomic_open(&b, p2, 0, m2, sizeof m2) != ES_OK) _exit(1);
      fputs("data", b.fp);
      if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
          mount(rdir, rdir, NULL, MS_BIND, NULL) != 0 ||
          mount(NULL, rdir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
        printf("a read-only bind mount refused (%s): the left temporary case skipped\n",
               strerror(errno));
        es_atomic_abort(&b);
        _exit(ES_TEST_SKIP);
      }
      char tmp[700];
      snprintf(tmp, sizeof tmp, "%s", b.tmp_path);
      int s = es_atomic_commit(&b, m2, sizeof m2);
      char want[800];
      snprintf(want, sizeof want, "; its temporary %s is left (cannot remove it: ", tmp);
      int ok = s == ES_ERR_OUTPUT && !strncmp(m2, "cannot rename into place: ", 26) &&
               strstr(m2, want) && access(tmp, F_OK) == 0 && access(p2, F_OK) != 0;
      if (!ok) fprintf(stderr, "read-only directory: %d '%s'\n", s, m2);
      _exit(ok ? 0 : 1);
    }
    int wst = 0;
    CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) &&
              (WEXITSTATUS(wst) == 0 || WEXITSTATUS(wst) == ES_TEST_SKIP),
          "read-only directory: the temporary left is not named (child status %d)", wst);
    DIR *d = opendir(rdir); /* the temporary left: removed now that the mount is gone */
    struct dirent *e;
    while (d && (e = readdir(d))) {
      char q[1000];
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(q, sizeof q, "%s/%s", rdir, e->d_name);
      unlink(q);
    }
    if (d) closedir(d);
    rmdir(rdir);
  }
  rmdir(dir);
  return es_test_done("test_io_atomic");
}

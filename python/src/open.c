/*
 * open.c - es.open: the frames of a video, a FIFO or standard input through the library's
 * run (es_run_* over es_source_video), each result copied by a sink of our own into a
 * bounded queue that a Python iterator (entropy_stream.Frames) takes from.
 *
 * Threads: es_run_execute runs on a thread started here, with the asynchronous signals
 * blocked so that Ctrl-C lands on the interpreter's thread (the run's own threads inherit
 * the mask). The run writes each result, in input order, on that thread, to our sink: it
 * waits while the queue holds `queue` frames, so memory stays bounded by the queue and the
 * run's own frames in flight (a fixed pool), as in the CLI, whatever the length of the video and however slow
 * the caller. __next__ waits on the queue with the GIL released, in slices of 100 ms with
 * PyErr_CheckSignals between them. close (or the iterator's deallocation) tells the sink
 * the caller is gone (it then drops what it is given), stops the run (es_run_stop), waits
 * for its end, joins the thread, destroys the run and frees the frames still queued; the
 * end of the input does the same before StopIteration. Nothing here runs Python code off
 * the interpreter's threads.
 *
 * A directory: its stills listed as the CLI lists them (es_still_list_dir: -r, --ext, name
 * order) become the library's list source (es_source_stills), whose run decodes and writes
 * through pools (run_batch.c) and hands our sink, an ordered one, each item in index order
 * with its map (kept until its turn, at most the run's queue of them). A file that fails is
 * said (the last line kept), skipped and counted; the end of the iteration raises it.
 */
#define PY_SSIZE_T_CLEAN
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL es_py_ARRAY_API
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <numpy/arrayobject.h>

#include "es_paths.h" /* es_still_list_dir: the CLI's directory walk (io/still_list.c) */
#include "es_py.h"

#define OPEN_MSG_LEN 512
/* tracemalloc's domain for the maps handed to the caller (allocated off the GIL with
 * malloc, so tracemalloc would not see them otherwise). */
#define MAP_TRACE_DOMAIN 0x6573u

/* Map buffers allocated and not yet freed: read by the tests (_open_live_maps) to see that
 * closing a run leaks none of the frames it had queued. */
static atomic_long live_maps;

/* One result as the sink copied it. */
typedef struct open_item {
  int64_t index;
  double pts; /* seconds, or NAN */
  int damaged;
  int width, height;
  int depth;  /* the frame's (a directory's images differ), or 0: the source's */
  float *map; /* width x height, malloc'd; NULL without map */
  int has_stats;
  es_stats stats;
} open_item;

/* The queue between the sink (the run's writing thread) and __next__. */
typedef struct open_queue {
  pthread_mutex_t lock;
  pthread_cond_t changed; /* broadcast on every change of the fields below; CLOCK_MONOTONIC */
  /* Immutable once the run started. */
  int cap;                    /* slots: the `queue` argument */
  int want_map, want_stats;
  /* Guarded by lock. */
  open_item *ring;            /* cap slots, count of them from head */
  int head, count;
  int gone;                   /* the caller closed: the sink drops what it is given */
  int depth;                  /* the source's bit depth, once the sink was opened */
  int ended;                  /* es_run_execute returned: code and msg are final */
  int code;                   /* the run's exit code (SPEC 3) */
  int64_t failed, items;      /* a directory's files that failed (its subdirectories that
                               * could not be read too), and its files */
  char msg[OPEN_MSG_LEN];     /* the run's last line: its error where code is not 0 */
} open_queue;

typedef struct frames_object {
  PyObject_HEAD
  open_queue q;       /* lock and cond made where q_made */
  int q_made;
  es_run *run;        /* NULL before it was made and once destroyed */
  pthread_t th;
  int th_started;     /* th runs es_run_execute: to be joined */
  int closing;        /* close began (a second close returns at once) */
  int reported;       /* the end or the error was given to the caller: StopIteration now */
  char *path, *name, *raw; /* PyMem_RawMalloc'd; the run's source points at path and name */
  int fifo;           /* path is a named FIFO: a close may have to open it (below) */
  PyObject *keep;     /* the file object whose descriptor is read: alive while the run is */
  PyObject *name_obj; /* Frame.name */
  PyObject *names;    /* a directory's: Frame.name of item i (a list), else NULL */
  PyObject *mask;     /* the mask's uint8 C-contiguous array: the run reads it until destroyed */
  es_params params;   /* for hmax */
} frames_object;

static PyTypeObject frames_type;
static PyTypeObject frame_type; /* a struct sequence */

static PyStructSequence_Field frame_fields[] = {
    {"index", "frame number, from 0"},
    {"pts", "presentation time in seconds (float), or None where the input has none"},
    {"name", "the input's name (the path, '-' for standard input), as in --stats records"},
    {"damaged", "True where the decoder concealed errors in this frame"},
    {"map", "float32 ndarray [H, W] the caller owns, or None with map=False"},
    {"stats", "dict of statistics (as entropy_stream.stats), or None with stats=False"},
    {NULL, NULL}};
static PyStructSequence_Desc frame_desc = {
    "entropy_stream.Frame",
    "One frame of entropy_stream.open: index, pts, name, damaged, map, stats.", frame_fields, 6};

static void map_free(float *map) {
  if (!map) return;
  free(map);
  atomic_fetch_sub(&live_maps, 1);
}

static void deadline_in(struct timespec *ts, long ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* ---- The sink (on the run's writing thread; never the GIL). ---- */

static int sink_open(es_sink *k, const es_source_info *info, es_sink_needs *needs, char *msg,
                     size_t len) {
  open_queue *q = k->self;
  (void)msg;
  (void)len;
  needs->want_map = q->want_map;
  needs->want_stats = q->want_stats;
  pthread_mutex_lock(&q->lock);
  q->depth = info->depth;
  pthread_cond_broadcast(&q->changed);
  pthread_mutex_unlock(&q->lock);
  return ES_OK;
}

static int sink_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  open_queue *q = k->self;
  float *map = NULL;
  /* Copied before waiting for a slot: the run's frame goes back to its pool at once, and
   * the copy is the array the caller will own (no second copy under the GIL). */
  if (q->want_map && it->map) {
    const size_t w = (size_t)it->width, h = (size_t)it->height;
    map = malloc(sizeof(float) * w * h);
    if (!map) {
      snprintf(msg, len, "out of memory for a %dx%d map", it->width, it->height);
      return ES_ERR_NOMEM;
    }
    atomic_fetch_add(&live_maps, 1);
    for (size_t y = 0; y < h; y++) memcpy(map + y * w, it->map + y * it->map_stride, sizeof(float) * w);
  }
  pthread_mutex_lock(&q->lock);
  while (q->count == q->cap && !q->gone) pthread_cond_wait(&q->changed, &q->lock);
  if (q->gone) { /* nobody will take it: the run is being stopped */
    pthread_mutex_unlock(&q->lock);
    map_free(map);
    return ES_OK;
  }
  open_item *s = &q->ring[(q->head + q->count) % q->cap];
  s->index = it->index;
  s->pts = it->pts_seconds;
  s->damaged = it->damaged;
  s->width = it->width;
  s->height = it->height;
  s->depth = it->depth;
  s->map = map;
  s->has_stats = q->want_stats && it->stats;
  if (s->has_stats) s->stats = *it->stats;
  q->count++;
  pthread_cond_broadcast(&q->changed);
  pthread_mutex_unlock(&q->lock);
  return ES_OK;
}

static int sink_close(es_sink *k, int commit, char *msg, size_t len) {
  (void)k; /* the queue is the iterator's, freed with it */
  (void)commit;
  (void)msg;
  (void)len;
  return ES_OK;
}

/* The run's lines (errors only: verbose 0), from any of its threads: the last one is the
 * error where the run fails (what failed is said last, then the run ends). */
static void on_message(void *user, const char *line) {
  open_queue *q = user;
  pthread_mutex_lock(&q->lock);
  snprintf(q->msg, sizeof q->msg, "%s", line);
  pthread_mutex_unlock(&q->lock);
}

/* A directory's walk: a subdirectory that cannot be read, a name that is not a regular file
 * ("PATH", "what"): kept as the last line (counted by the caller). */
static void list_say(void *user, const char *what, const char *line) {
  open_queue *q = user;
  pthread_mutex_lock(&q->lock);
  snprintf(q->msg, sizeof q->msg, "%s: %s", what, line);
  pthread_mutex_unlock(&q->lock);
}

static void *run_main(void *arg) {
  frames_object *o = arg; /* only o->run and o->q: no Python here */
  es_run_counts c;
  es_run_execute(o->run);
  es_run_get_counts(o->run, &c);
  pthread_mutex_lock(&o->q.lock);
  o->q.ended = 1;
  o->q.code = c.exit_code;
  o->q.failed += c.failed;
  pthread_cond_broadcast(&o->q.changed);
  pthread_mutex_unlock(&o->q.lock);
  return NULL;
}

/* ---- Closing. ---- */

/* Stops the run, waits for its end, joins its thread, destroys it and frees the frames still
 * queued. The GIL held on entry; released while waiting. */
static void frames_close_run(frames_object *o) {
  if (o->closing) return;
  o->closing = 1;
  if (o->q_made) {
    pthread_mutex_lock(&o->q.lock);
    o->q.gone = 1;
    pthread_cond_broadcast(&o->q.changed);
    pthread_mutex_unlock(&o->q.lock);
  }
  if (o->run) es_run_stop(o->run);
  Py_BEGIN_ALLOW_THREADS
  if (o->th_started) {
    pthread_mutex_lock(&o->q.lock);
    while (!o->q.ended) {
      struct timespec dl;
      deadline_in(&dl, 100);
      if (pthread_cond_timedwait(&o->q.changed, &o->q.lock, &dl) != ETIMEDOUT || !o->fifo)
        continue;
      /* A named FIFO no writer opened yet: the reader waits in open(2), which a stop does
       * not wake (the CLI's signal does). Opening it for writing, without blocking, ends
       * that wait; the run then sees its stop. Fails harmlessly (ENXIO) once nobody waits. */
      pthread_mutex_unlock(&o->q.lock);
      int fd = open(o->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) close(fd);
      pthread_mutex_lock(&o->q.lock);
    }
    pthread_mutex_unlock(&o->q.lock);
    pthread_join(o->th, NULL);
    o->th_started = 0;
  }
  es_run_destroy(&o->run);
  Py_END_ALLOW_THREADS
  if (o->q_made) {
    pthread_mutex_lock(&o->q.lock);
    for (; o->q.count > 0; o->q.count--) {
      map_free(o->q.ring[o->q.head].map);
      o->q.ring[o->q.head].map = NULL;
      o->q.head = (o->q.head + 1) % o->q.cap;
    }
    pthread_mutex_unlock(&o->q.lock);
  }
  Py_CLEAR(o->keep);
  Py_CLEAR(o->mask); /* after es_run_destroy: the run read it */
}

static void frames_dealloc(frames_object *o) {
  frames_close_run(o);
  if (o->q_made) {
    pthread_cond_destroy(&o->q.changed);
    pthread_mutex_destroy(&o->q.lock);
  }
  PyMem_RawFree(o->q.ring);
  PyMem_RawFree(o->path);
  PyMem_RawFree(o->name);
  PyMem_RawFree(o->raw);
  Py_XDECREF(o->name_obj);
  Py_XDECREF(o->names);
  Py_TYPE(o)->tp_free((PyObject *)o);
}

/* ---- The iterator. ---- */

static void map_capsule_free(PyObject *cap) {
  float *map = PyCapsule_GetPointer(cap, "entropy_stream.map");
  PyTraceMalloc_Untrack(MAP_TRACE_DOMAIN, (uintptr_t)map);
  map_free(map);
}

/* The map as an ndarray that owns it (through a capsule that frees it). Takes the buffer
 * whatever happens. */
static PyObject *map_array(float *map, int height, int width) {
  npy_intp dims[2] = {height, width};
  PyObject *cap = PyCapsule_New(map, "entropy_stream.map", map_capsule_free);
  if (!cap) {
    map_free(map);
    return NULL;
  }
  PyTraceMalloc_Track(MAP_TRACE_DOMAIN, (uintptr_t)map, sizeof(float) * (size_t)height * width);
  PyObject *arr = PyArray_SimpleNewFromData(2, dims, NPY_FLOAT32, map);
  if (!arr) {
    Py_DECREF(cap);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* it took cap */
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

static PyObject *make_frame(frames_object *o, open_item *it, int depth) {
  PyObject *map = Py_None, *stats = Py_None, *f = NULL;
  Py_INCREF(Py_None);
  Py_INCREF(Py_None);
  if (it->map) {
    Py_DECREF(map);
    map = map_array(it->map, it->height, it->width);
    it->map = NULL;
    if (!map) goto fail;
  }
  if (it->has_stats) {
    /* 8-bit input computes levels above 256 as 256 (es_types.h): its hmax is theirs */
    es_params p = o->params;
    if (depth == 8 && p.levels > 256) p.levels = 256;
    Py_DECREF(stats);
    stats = stats_dict(&it->stats, es_params_hmax(&p));
    if (!stats) goto fail;
  }
  f = PyStructSequence_New(&frame_type);
  if (!f) goto fail;
  PyStructSequence_SET_ITEM(f, 0, PyLong_FromLongLong((long long)it->index));
  PyStructSequence_SET_ITEM(f, 1, isnan(it->pts) ? (Py_INCREF(Py_None), Py_None)
                                                 : PyFloat_FromDouble(it->pts));
  PyObject *name = o->name_obj;
  if (o->names && it->index >= 0 && it->index < PyList_GET_SIZE(o->names))
    name = PyList_GET_ITEM(o->names, it->index); /* a directory's item: its relative name */
  Py_INCREF(name);
  PyStructSequence_SET_ITEM(f, 2, name);
  PyStructSequence_SET_ITEM(f, 3, PyBool_FromLong(it->damaged));
  PyStructSequence_SET_ITEM(f, 4, map);
  PyStructSequence_SET_ITEM(f, 5, stats);
  if (!PyStructSequence_GET_ITEM(f, 0) || !PyStructSequence_GET_ITEM(f, 1)) {
    Py_DECREF(f);
    return NULL;
  }
  return f;
fail:
  map_free(it->map);
  it->map = NULL;
  Py_XDECREF(map);
  Py_XDECREF(stats);
  return NULL;
}

/* The run's failure as the exception of its exit code (SPEC 3): usage ValueError, input
 * and output OSError, out of memory MemoryError, a device RuntimeError. */
static void raise_run_error(int code, const char *msg, int64_t failed, int64_t items) {
  PyObject *type = PyExc_RuntimeError;
  /* A mask of another size than a frame or an image is a bad parameter, as es.entropy's. */
  const int mask_size = strstr(msg, ", the mask") && strstr(msg, "not the same size");
  if (failed > 0) { /* a directory: the others were given; the last failure is said */
    type = mask_size ? PyExc_ValueError : PyExc_OSError;
    PyErr_Format(type, "entropy-stream: %s (%lld of %lld files failed, the others were given)",
                 *msg ? msg : "a file failed", (long long)failed, (long long)items);
    return;
  }
  switch (code) {
  case 1: type = PyExc_ValueError; break;
  case 2:
  case 3: type = PyExc_OSError; break;
  case 130: type = PyExc_KeyboardInterrupt; break;
  default: /* 4: a device, or memory (es_exit_code gives both 4; the line tells them apart) */
    if (strstr(msg, "out of memory")) type = PyExc_MemoryError;
    break;
  }
  if (mask_size) type = PyExc_ValueError;
  PyErr_Format(type, "entropy-stream: %s", *msg ? msg : "the run failed");
}

static PyObject *frames_next(frames_object *o) {
  open_item it;
  int got = 0, ended = 0, code = 0, depth = 0;
  int64_t failed = 0, items = 0;
  char msg[OPEN_MSG_LEN] = "";
  if (o->reported || o->closing) return NULL; /* StopIteration */
  for (;;) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&o->q.lock);
    struct timespec dl;
    deadline_in(&dl, 100);
    while (!o->q.count && !o->q.ended && !o->q.gone)
      if (pthread_cond_timedwait(&o->q.changed, &o->q.lock, &dl) == ETIMEDOUT) break;
    if (o->q.count) {
      it = o->q.ring[o->q.head];
      depth = it.depth ? it.depth : o->q.depth;
      o->q.ring[o->q.head].map = NULL;
      o->q.head = (o->q.head + 1) % o->q.cap;
      o->q.count--;
      got = 1;
      pthread_cond_broadcast(&o->q.changed); /* a slot for the sink */
    } else if (o->q.ended || o->q.gone) {
      ended = 1;
      code = o->q.gone ? 0 : o->q.code;
      failed = o->q.gone ? 0 : o->q.failed;
      items = o->q.items;
      if (failed && code == 0) code = 2; /* a subdirectory unreadable (SPEC 3: input) */
      snprintf(msg, sizeof msg, "%s", o->q.msg);
    }
    pthread_mutex_unlock(&o->q.lock);
    Py_END_ALLOW_THREADS
    if (got) return make_frame(o, &it, depth);
    if (ended) break;
    if (PyErr_CheckSignals()) return NULL; /* KeyboardInterrupt: the run goes on */
  }
  o->reported = 1;
  frames_close_run(o); /* the run has ended: its thread is joined at once */
  if (code != 0) raise_run_error(code, msg, failed, items);
  return NULL;
}

static PyObject *frames_close(frames_object *o, PyObject *unused) {
  (void)unused;
  frames_close_run(o);
  o->reported = 1;
  Py_RETURN_NONE;
}

static PyObject *frames_enter(frames_object *o, PyObject *unused) {
  (void)unused;
  Py_INCREF(o);
  return (PyObject *)o;
}

static PyObject *frames_exit(frames_object *o, PyObject *args) {
  (void)args;
  Py_DECREF(frames_close(o, NULL)); /* None */
  Py_RETURN_FALSE;                  /* an exception in the with block goes on */
}

static PyObject *frames_closed(frames_object *o, void *unused) {
  (void)unused;
  return PyBool_FromLong(o->closing);
}

static PyMethodDef frames_methods[] = {
    {"close", (PyCFunction)frames_close, METH_NOARGS,
     "close()\n\nStops the run, waits for its thread and frees the frames it had queued "
     "(those already given stay the caller's). Iteration then ends. Called again: nothing."},
    {"__enter__", (PyCFunction)frames_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)frames_exit, METH_VARARGS, "Closes (see close)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef frames_getset[] = {
    {"closed", (getter)frames_closed, NULL, "True once closed or read to its end.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject frames_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "entropy_stream.Frames",
    .tp_basicsize = sizeof(frames_object),
    .tp_dealloc = (destructor)frames_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The frames of entropy_stream.open: an iterator and a context manager.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)frames_next,
    .tp_methods = frames_methods,
    .tp_getset = frames_getset,
};

/* ---- Starting. ---- */

static char *raw_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = PyMem_RawMalloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* open_run's own arguments (beyond parse_common's), checked: 1, or 0 with the exception set. */
static int open_args_ok(int levels, int queue, double in_lo, double in_hi, PyObject *ext,
                        PyObject *mask, PyObject *raw) {
  /* levels: any depth takes 2..65536 (8-bit input computes those above 256 as 256) */
  if (levels < 2 || levels > 65536) {
    PyErr_Format(PyExc_ValueError, "levels=%d: must be 2..65536", levels);
    return 0;
  }
  if (queue < 1 || queue > 4096) {
    PyErr_Format(PyExc_ValueError, "queue=%d: must be 1..4096 (frames waiting for the caller)", queue);
    return 0;
  }
  if (!(isnan(in_lo) && isnan(in_hi)) && !(isfinite(in_lo) && isfinite(in_hi) && in_lo < in_hi)) {
    char m[160];
    snprintf(m, sizeof m, "in_range=(%g, %g): must be None or (lo, hi), finite, lo < hi", in_lo,
             in_hi);
    PyErr_SetString(PyExc_ValueError, m);
    return 0;
  }
  if (ext != Py_None && !PyUnicode_Check(ext)) {
    PyErr_Format(PyExc_TypeError, "ext=%R: must be a str such as 'png,jpg' or None", ext);
    return 0;
  }
  if (mask != Py_None &&
      (!PyArray_Check(mask) || PyArray_NDIM((PyArrayObject *)mask) != 2 ||
       PyArray_TYPE((PyArrayObject *)mask) != NPY_UINT8 ||
       !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)mask) ||
       PyArray_DIM((PyArrayObject *)mask, 0) < 1 || PyArray_DIM((PyArrayObject *)mask, 1) < 1 ||
       PyArray_DIM((PyArrayObject *)mask, 0) > INT32_MAX ||
       PyArray_DIM((PyArrayObject *)mask, 1) > INT32_MAX)) {
    PyErr_SetString(PyExc_ValueError, "mask: must be a non-empty 2-D array");
    return 0;
  }
  if (raw != Py_None && !PyUnicode_Check(raw)) {
    PyErr_Format(PyExc_TypeError, "raw=%R: must be a str such as 'gray8:640x480' or None", raw);
    return 0;
  }
  return 1;
}

/* The Frames object with its names and its queue to the caller, before any run: NULL with
 * the exception set. */
static frames_object *frames_new(PyObject *path_b, PyObject *name_b, PyObject *keep, PyObject *raw,
                                 int queue, int want_map, int want_stats, const es_params *params) {
  frames_object *o = PyObject_New(frames_object, &frames_type);
  if (!o) return NULL;
  memset((char *)o + sizeof(PyObject), 0, sizeof *o - sizeof(PyObject));
  o->params = *params;
  o->path = raw_strdup(PyBytes_AS_STRING(path_b));
  o->name = raw_strdup(PyBytes_AS_STRING(name_b));
  o->name_obj = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(name_b));
  if (raw != Py_None) {
    const char *r = PyUnicode_AsUTF8(raw);
    if (!r) goto fail;
    o->raw = raw_strdup(r);
    if (!o->raw) goto nomem;
  }
  o->q.ring = PyMem_RawCalloc((size_t)queue, sizeof *o->q.ring);
  if (!o->path || !o->name || !o->q.ring) goto nomem;
  if (!o->name_obj) goto fail;
  {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&o->q.lock, NULL);
    pthread_cond_init(&o->q.changed, &ca);
    pthread_condattr_destroy(&ca);
    o->q_made = 1;
  }
  o->q.cap = queue;
  o->q.want_map = want_map;
  o->q.want_stats = want_stats;
  struct stat st;
  o->fifo = strncmp(o->path, "/dev/fd/", 8) && stat(o->path, &st) == 0 && S_ISFIFO(st.st_mode);
  if (keep != Py_None) {
    Py_INCREF(keep);
    o->keep = keep;
  }
  return o;
nomem:
  PyErr_NoMemory();
fail:
  Py_DECREF(o); /* its dealloc destroys what was made */
  return NULL;
}

/* The run's configuration: the call's parameters, messages to the queue, and the mask,
 * which o keeps alive while the run reads it. */
static void open_run_config(frames_object *o, const call_args *a, PyObject *mask,
                            es_run_config *rc) {
  es_run_config_default(rc);
  rc->cfg.params = a->key.params;
  rc->cfg.device = a->key.device;
  rc->cfg.threads = a->key.threads;
  rc->cfg.stats_bins = a->key.stats_bins;
  /* The run's own frames in flight: the library's default, as the CLI's without --queue (8,
   * or 4 a GPU where more than two are used); `queue` bounds only what waits for the caller,
   * so that a small one does not starve the GPUs. */
  rc->cfg.verbose = 0; /* errors only: they become the exception */
  rc->cfg.message = on_message;
  rc->cfg.message_user = &o->q;
  if (mask != Py_None) { /* every frame's: read by the run until es_run_destroy */
    Py_INCREF(mask);
    o->mask = mask;
    rc->mask = PyArray_DATA((PyArrayObject *)mask);
    rc->mask_stride = (size_t)PyArray_STRIDE((PyArrayObject *)mask, 0);
    rc->mask_height = (int)PyArray_DIM((PyArrayObject *)mask, 0);
    rc->mask_width = (int)PyArray_DIM((PyArrayObject *)mask, 1);
  }
}

/* A directory's source: the CLI's walk (hidden names skipped, -r into real subdirectories,
 * --ext), in name order; item i is Frame i. 1 with the library's status in *rc_lib, or 0
 * with the exception set. */
static int open_dir_source(frames_object *o, int recursive, PyObject *ext, es_source *src,
                           int *rc_lib) {
  char lmsg[OPEN_MSG_LEN] = "";
  const char **lpaths = NULL, **lnames = NULL;
  es_still_list list;
  es_still_list_opts lo;
  int ok = 0;
  memset(&list, 0, sizeof list);
  memset(&lo, 0, sizeof lo);
  lo.recursive = recursive;
  lo.ext = ext != Py_None ? PyUnicode_AsUTF8(ext) : NULL;
  if (ext != Py_None && !lo.ext) goto end;
  lo.say = list_say;
  lo.say_arg = &o->q;
  Py_BEGIN_ALLOW_THREADS *rc_lib = es_still_list_dir(&list, o->path, &lo, lmsg, sizeof lmsg);
  Py_END_ALLOW_THREADS if (*rc_lib == ES_ERR_NOMEM) goto nomem;
  if (*rc_lib != ES_OK) {
    PyErr_Format(PyExc_OSError, "entropy-stream: %s: %s", o->name, lmsg);
    goto end;
  }
  o->q.failed = (int64_t)list.unreadable;
  o->q.items = (int64_t)list.n;
  o->names = PyList_New((Py_ssize_t)list.n);
  lpaths = PyMem_RawCalloc(list.n ? list.n : 1, sizeof *lpaths);
  lnames = PyMem_RawCalloc(list.n ? list.n : 1, sizeof *lnames);
  if (!o->names || !lpaths || !lnames) goto nomem;
  for (size_t i = 0; i < list.n; i++) {
    PyObject *nm = PyUnicode_DecodeFSDefault(list.e[i].name);
    if (!nm) goto end;
    PyList_SET_ITEM(o->names, (Py_ssize_t)i, nm);
    lpaths[i] = list.e[i].path;
    lnames[i] = list.e[i].name;
  }
  es_stills_source_opts so = {(int64_t)1 << 31, 0, 0, o->name}; /* the CLI's --max-pixels */
  *rc_lib = es_source_stills(src, lpaths, lnames, list.n, &so); /* copies both */
  ok = 1;
  goto end;
nomem:
  PyErr_NoMemory();
end:
  PyMem_RawFree(lpaths);
  PyMem_RawFree(lnames);
  es_still_list_free(&list);
  return ok;
}

/* The sink that hands each frame to the caller's queue (sink_open, sink_write, sink_close). */
static int open_add_queue_sink(frames_object *o) {
  es_sink sink;
  memset(&sink, 0, sizeof sink);
  sink.name = "entropy_stream.open";
  sink.self = &o->q;
  sink.open = sink_open;
  sink.write = sink_write;
  sink.close = sink_close;
  return es_run_add_sink(o->run, &sink);
}

/* The run's thread (run_main): 1, or 0 with the exception set. */
static int open_start_thread(frames_object *o) {
  /* The run's threads inherit this thread's mask: Ctrl-C must reach the interpreter's
   * thread, not land on a decoder's read. Faults stay deliverable. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(&o->th, NULL, run_main, o);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    PyErr_Format(PyExc_RuntimeError, "entropy-stream: cannot start the run's thread: %s",
                 strerror(e));
    return 0;
  }
  o->th_started = 1;
  return 1;
}

/* _core.open_run(path, name, keep, *, window, shape, border, levels, base, device, map,
 * stats, raw, queue, bins, threads, dir, recursive, ext, mask, in_lo, in_hi):
 * entropy_stream.open checked the source (path is what the library opens, name what
 * messages and frames call it, keep the file object to keep alive; dir: path is a
 * directory) and the mask (None, or a 2-D uint8 C-contiguous array, 1 inside) and passes
 * the rest as given. */
static PyObject *py_open_run(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *names[] = {"path",   "name",  "keep",    "window", "shape",     "border",
                          "levels", "base",  "device",  "map",    "stats",     "raw",
                          "queue",  "bins",  "threads", "dir",    "recursive", "ext",
                          "mask",   "in_lo", "in_hi",   NULL};
  PyObject *path_b, *name_b, *keep, *shape = NULL, *border = NULL, *base = NULL, *device = NULL,
                                    *raw = Py_None;
  int window = 5, levels = 16, want_map = 1, want_stats = 1, queue = 4, bins = 16, threads = 0;
  int is_dir = 0, recursive = 0;
  PyObject *ext = Py_None, *mask = Py_None;
  double in_lo = NAN, in_hi = NAN;
  frames_object *o = NULL;
  es_source src;
  es_run_config rc;
  call_args a;
  int rc_lib;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O|$iOOiOOppOiiippOOdd:open_run", names,
                                   PyUnicode_FSConverter, &path_b, PyUnicode_FSConverter, &name_b,
                                   &keep, &window, &shape, &border, &levels, &base, &device,
                                   &want_map, &want_stats, &raw, &queue, &bins, &threads, &is_dir,
                                   &recursive, &ext, &mask, &in_lo, &in_hi))
    return NULL;
  if (!parse_common(shape, border, base, device, window, levels, threads, bins, &a)) goto fail;
  if (!open_args_ok(levels, queue, in_lo, in_hi, ext, mask, raw)) goto fail;
  a.key.params.in_lo = in_lo; /* float samples (a float32 TIFF): NaN, NaN: each its own range */
  a.key.params.in_hi = in_hi;
  o = frames_new(path_b, name_b, keep, raw, queue, want_map, want_stats, &a.key.params);
  if (!o) goto fail;
  open_run_config(o, &a, mask, &rc);
  if (is_dir) {
    if (!open_dir_source(o, recursive, ext, &src, &rc_lib)) goto fail;
  } else {
    es_video_source_opts vso = {o->raw, (int64_t)1 << 31, 0}; /* the CLI's --max-pixels */
    rc_lib = es_source_video(&src, o->path, &vso);
    if (rc_lib == ES_OK) src.name = o->name; /* "-" for standard input read through /dev/fd/0 */
  }
  if (rc_lib == ES_OK) rc_lib = es_run_create(&o->run, &rc, &src); /* owns src from here */
  if (rc_lib == ES_OK) rc_lib = open_add_queue_sink(o);
  if (rc_lib != ES_OK) {
    raise_status(rc_lib, "cannot start the run");
    goto fail;
  }
  if (!open_start_thread(o)) goto fail;
  Py_DECREF(path_b);
  Py_DECREF(name_b);
  return (PyObject *)o;
fail:
  Py_DECREF(path_b);
  Py_DECREF(name_b);
  Py_XDECREF(o); /* its dealloc destroys what was made */
  return NULL;
}

static PyObject *py_open_live_maps(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(atomic_load(&live_maps));
}

static PyMethodDef open_methods[] = {
    {"open_run", (PyCFunction)(void (*)(void))py_open_run, METH_VARARGS | METH_KEYWORDS,
     "open_run(path, name, keep, *, window, shape, border, levels, base, device, map, stats, "
     "raw, queue, bins, threads)\n\nStarts a run; used by entropy_stream.open."},
    {"_open_live_maps", py_open_live_maps, METH_NOARGS,
     "Maps of es.open allocated and not yet freed (tests: a closed run leaks none)."},
    {NULL, NULL, 0, NULL}};

int es_py_open_init(PyObject *m) {
  if (PyType_Ready(&frames_type) < 0) return -1;
  if (!frame_type.tp_name && PyStructSequence_InitType2(&frame_type, &frame_desc) < 0) return -1;
  if (PyModule_AddFunctions(m, open_methods) < 0) return -1;
  Py_INCREF(&frames_type);
  if (PyModule_AddObject(m, "Frames", (PyObject *)&frames_type) < 0) {
    Py_DECREF(&frames_type);
    return -1;
  }
  Py_INCREF(&frame_type);
  if (PyModule_AddObject(m, "Frame", (PyObject *)&frame_type) < 0) {
    Py_DECREF(&frame_type);
    return -1;
  }
  return 0;
}

/*
 * core.c - entropy_stream._core, the C half of the Python module: NumPy arrays in, the
 * library's one-shot call (es_compute) or its stream (es_stream_*) over them, float32 maps
 * and statistics out. Uses only the public header, entropy_stream.h.
 *
 * Contexts: a context fixes the parameters (es_config.params), so one is made for each
 * (parameters, device, threads, statistics bins) asked for and kept for the life of the
 * process (opening GPUs costs hundreds of ms; es_compute is safe from several threads on
 * one context). They are never destroyed: a thread of the interpreter may still be inside
 * es_compute, with the GIL released, while the interpreter finalizes.
 *
 * The GIL is released while the library computes. A long call can be interrupted: a 2-D
 * image of more than band_pixels is computed in bands of rows (each with r rows of halo, so
 * the result is the same bits as one call) and a 3-D stack frame by frame, with the GIL
 * taken back between them to run PyErr_CheckSignals.
 */
#define PY_SSIZE_T_CLEAN
#define PY_ARRAY_UNIQUE_SYMBOL es_py_ARRAY_API /* open.c uses the NumPy API too */
#include <Python.h>
#include <pythread.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <numpy/arrayobject.h>

#include "es_py.h"

/* ---- Contexts, one for each configuration asked for. ---- */

#define CTX_CACHE_MAX 64
static struct {
  ctx_key key;
  es_context *ctx;
} ctx_cache[CTX_CACHE_MAX]; /* guarded by ctx_lock; entries are never removed */
static int ctx_count;        /* guarded by ctx_lock */
static PyThread_type_lock ctx_lock;

/* Rows are computed in bands of about this many pixels (each band one es_compute), so that
 * Ctrl-C is seen between bands. Settable for tests (_set_band_pixels). */
static int64_t band_pixels = (int64_t)1 << 24;

/* Equal doubles, NaN equal to NaN (the float range's "each image's own"). */
static int same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static int key_equal(const ctx_key *a, const ctx_key *b) {
  return a->params.window == b->params.window && a->params.shape == b->params.shape &&
         a->params.border == b->params.border && a->params.levels == b->params.levels &&
         a->params.base == b->params.base && same_double(a->params.in_lo, b->params.in_lo) &&
         same_double(a->params.in_hi, b->params.in_hi) &&
         a->params.mask_computed == b->params.mask_computed && a->device == b->device &&
         a->threads == b->threads && a->stats_bins == b->stats_bins;
}

/* The context for key, made on first use. Called without the GIL (opening a GPU is slow).
 * *own is set to 1 where the cache is full and the caller must destroy the context. */
static int context_get(const ctx_key *key, es_context **out, int *own, char *msg,
                       size_t msglen) {
  int rc = ES_OK;
  *out = NULL;
  *own = 0;
  PyThread_acquire_lock(ctx_lock, WAIT_LOCK);
  for (int i = 0; i < ctx_count; i++) {
    if (key_equal(&ctx_cache[i].key, key)) {
      *out = ctx_cache[i].ctx;
      goto end;
    }
  }
  es_config cfg;
  es_config_default(&cfg);
  cfg.params = key->params;
  cfg.device = key->device;
  cfg.threads = key->threads;
  cfg.stats_bins = key->stats_bins;
  rc = es_context_create(out, &cfg, msg, msglen);
  if (rc) goto end;
  if (ctx_count < CTX_CACHE_MAX) {
    ctx_cache[ctx_count].key = *key;
    ctx_cache[ctx_count].ctx = *out;
    ctx_count++;
  } else {
    *own = 1;
  }
end:
  PyThread_release_lock(ctx_lock);
  return rc;
}

/* ---- Errors. ---- */

/* Raises the Python exception of a library status (the GIL held). */
void raise_status(int rc, const char *what) {
  PyObject *type = PyExc_RuntimeError;
  switch (rc) {
  case ES_ERR_USAGE:
  case ES_ERR_INPUT: type = PyExc_ValueError; break;
  case ES_ERR_OUTPUT: type = PyExc_OSError; break;
  case ES_ERR_NOMEM: type = PyExc_MemoryError; break;
  case ES_ERR_INTERRUPTED: type = PyExc_KeyboardInterrupt; break;
  case ES_ERR_INTERNAL: type = PyExc_SystemError; break;
  default: break; /* ES_ERR_DEVICE: RuntimeError */
  }
  PyErr_Format(type, "entropy-stream: %s", what && what[0] ? what : es_strerror(rc));
}

/* ---- Arguments. ---- */

/* The library's rules (core/params.c, es_param_*) with the keywords' names: a library
 * message "window 4: must be odd, 1..255" becomes "window=4: must be odd, 1..255", and a
 * parameter's name its keyword's (stats_bins: bins). */
static const char *keyword_of(const char *param) {
  return !strcmp(param, "stats_bins") ? "bins" : param;
}

/* A ValueError from a library message about a parameter (es_param_ref), named as its keyword. */
static void raise_param(const char *msg) {
  size_t n = es_param_ref(msg);
  char name[32];
  if (!n || n >= sizeof name) {
    PyErr_SetString(PyExc_ValueError, msg);
    return;
  }
  snprintf(name, sizeof name, "%.*s", (int)n, msg);
  PyErr_Format(PyExc_ValueError, "%s%s%s", keyword_of(name), msg[n] == ' ' ? "=" : "",
               msg + n + (msg[n] == ' '));
}

/* A number keyword: ValueError ("threads=5000: must be 0..4096 (0 = all cores)") unless
 * the library takes it. */
static int check_number(const char *param, int64_t v) {
  char msg[160];
  if (es_param_check(param, v, msg, sizeof msg) == ES_OK) return 1;
  raise_param(msg);
  return 0;
}

/* A keyword argument that names a value of an enumerated parameter (es_param_parse): the
 * value in *v, or a ValueError naming the argument and the allowed names ("must be 'square'
 * or 'disk'"). */
static int parse_choice(PyObject *o, const char *param, int *v) {
  const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  if (s && es_param_parse(param, s, v, NULL, 0) == ES_OK) return 1;
  PyErr_Clear(); /* a string that is not UTF-8: refused as any other */
  char allowed[128];
  es_param_names(param, "'", allowed, sizeof allowed);
  PyErr_Format(PyExc_ValueError, "%s=%R: must be %s", keyword_of(param), o, allowed);
  return 0;
}

static int parse_shape(PyObject *o, int *v) { return parse_choice(o, "shape", v); }
static int parse_border(PyObject *o, int *v) { return parse_choice(o, "border", v); }

/* base: 2 (bits) or "e" (nats); math.e is taken for "e" too. */
static int parse_base(PyObject *o, int *v) {
  if (PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, "e") == 0)
    return *v = ES_BASE_E, 1;
  if (PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, "2") == 0)
    return *v = ES_BASE_2, 1;
  if (PyLong_Check(o) || PyFloat_Check(o)) {
    double d = PyFloat_AsDouble(o);
    if (d == 2.0) return *v = ES_BASE_2, 1;
    if (d == M_E) return *v = ES_BASE_E, 1;
  }
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError, "base=%R: must be 2 (bits) or 'e' (nats)", o);
  return 0;
}

static int parse_device(PyObject *o, int *v) { return parse_choice(o, "device", v); }

/* The keyword arguments common to entropy and stats; everything checked that does not
 * depend on the image. shape, border, base or device NULL (not given): the default, square,
 * clip, 2 and auto (es_params_default; ES_DEVICE_AUTO is 0). */
int parse_common(PyObject *shape, PyObject *border, PyObject *base, PyObject *device,
                 int window, int levels, int threads, int bins, call_args *a) {
  memset(a, 0, sizeof *a);
  es_params_default(&a->key.params);
  if (!check_number("window", window)) return 0;
  a->key.params.window = window;
  a->key.params.levels = levels; /* its range depends on the dtype: checked with the image */
  if ((shape && !parse_shape(shape, &a->key.params.shape)) ||
      (border && !parse_border(border, &a->key.params.border)) ||
      (base && !parse_base(base, &a->key.params.base)) ||
      (device && !parse_device(device, &a->key.device)))
    return 0;
  if (!check_number("threads", threads) || !check_number("stats_bins", bins)) return 0;
  a->key.threads = threads;
  a->key.stats_bins = bins;
  return 1;
}

/* in_range (in_lo, in_hi: NaN, NaN for each image's own) and mask_computed. */
static int parse_float_rule(double lo, double hi, int mask_computed, call_args *a) {
  if (!(isnan(lo) && isnan(hi)) && !(isfinite(lo) && isfinite(hi) && lo < hi)) {
    char m[160];
    snprintf(m, sizeof m, "in_range=(%g, %g): must be None or (lo, hi), finite, lo < hi", lo, hi);
    PyErr_SetString(PyExc_ValueError, m);
    return 0;
  }
  a->key.params.in_lo = lo;
  a->key.params.in_hi = hi;
  a->key.params.mask_computed = mask_computed;
  return 1;
}

/* ---- Images. ---- */

/* The image as an array the library can read in place: uint8 or native uint16, 2-D or
 * 3-D, rows of contiguous aligned samples at a positive row stride. An array already so is
 * used as it is (a new reference); any other layout becomes one C-contiguous copy.
 * Returns NULL with an exception set. */
static PyArrayObject *image_array(PyObject *image, int *depth) {
  if (PyObject_HasAttrString(image, "__cuda_array_interface__") && !PyArray_Check(image)) {
    PyErr_SetString(PyExc_TypeError,
                    "a CUDA array (__cuda_array_interface__) reached the host path: call "
                    "entropy_stream.entropy, which takes CuPy arrays");
    return NULL;
  }
  PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(image, NULL, 0, 0, 0, NULL);
  if (!arr) return NULL;
  int type = PyArray_TYPE(arr);
  if (type != NPY_UINT8 && type != NPY_UINT16 && type != NPY_FLOAT32) {
    PyObject *d = PyObject_Str((PyObject *)PyArray_DESCR(arr));
    PyErr_Format(PyExc_TypeError, "image dtype %S: must be uint8, uint16 or float32", d ? d : Py_None);
    Py_XDECREF(d);
    goto fail;
  }
  *depth = type == NPY_UINT8 ? 8 : type == NPY_UINT16 ? 16 : 32;
  int nd = PyArray_NDIM(arr);
  if (nd != 2 && nd != 3) {
    PyErr_Format(PyExc_ValueError, "image has %d dimensions: must be 2-D [H, W] or 3-D "
                 "[T, H, W]", nd);
    goto fail;
  }
  npy_intp *dims = PyArray_DIMS(arr);
  for (int i = 0; i < nd; i++) {
    if (dims[i] == 0) {
      PyErr_SetString(PyExc_ValueError, "image is empty (a dimension is 0)");
      goto fail;
    }
  }
  if (dims[nd - 1] > INT32_MAX || dims[nd - 2] > INT32_MAX || (nd == 3 && dims[0] > INT32_MAX)) {
    PyErr_SetString(PyExc_ValueError, "image too large: a side exceeds 2^31-1");
    goto fail;
  }
  npy_intp item = PyArray_ITEMSIZE(arr), *st = PyArray_STRIDES(arr);
  int readable = PyArray_ISALIGNED(arr) && PyArray_ISNOTSWAPPED(arr) && st[nd - 1] == item &&
                 (dims[nd - 2] == 1 || st[nd - 2] >= dims[nd - 1] * item);
  if (!readable) {
    PyArray_Descr *descr = PyArray_DescrFromType(type); /* native byte order */
    PyArrayObject *copy = (PyArrayObject *)PyArray_FromArray(
        arr, descr, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_ENSURECOPY);
    Py_DECREF(arr);
    return copy;
  }
  return arr;
fail:
  Py_DECREF(arr);
  return NULL;
}

/* Row stride in bytes of an image array from image_array (1 row: its width). */
static size_t row_stride(PyArrayObject *a) {
  int nd = PyArray_NDIM(a);
  if (PyArray_DIMS(a)[nd - 2] == 1) return (size_t)(PyArray_DIMS(a)[nd - 1] * PyArray_ITEMSIZE(a));
  return (size_t)PyArray_STRIDES(a)[nd - 2];
}

/* levels for this depth, with the Python names in the message: the library's rule, and
 * the module's own for uint8 (no more levels than values: where the library computes L
 * above 256 as 256, a Python caller is told). */
static int check_levels(const call_args *a, int depth) {
  const char *dtype = depth == 8 ? "uint8" : depth == 16 ? "uint16" : "float32";
  int levels = a->key.params.levels;
  char msg[160];
  if (es_param_check("levels", levels, msg, sizeof msg) == ES_OK && (depth != 8 || levels <= 256))
    return 1;
  if (depth == 8) /* "levels=300: must be 2..256 for uint8 input" */
    PyErr_Format(PyExc_ValueError, "levels=%d: must be 2..256 for %s input", levels, dtype);
  else /* "levels=1: must be 2..65536 for uint16 input" */
    PyErr_Format(PyExc_ValueError, "levels=%s for %s input", msg + strlen("levels "), dtype);
  return 0;
}

/* The bytes [lo, hi) an array's elements span. */
static void array_extent(PyArrayObject *a, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t base = (uintptr_t)PyArray_DATA(a), l = base, h = base;
  for (int i = 0; i < PyArray_NDIM(a); i++) {
    npy_intp s = PyArray_STRIDES(a)[i] * (PyArray_DIMS(a)[i] - 1);
    if (s < 0) l -= (uintptr_t)(-s);
    else h += (uintptr_t)s;
  }
  *lo = l;
  *hi = h + (uintptr_t)PyArray_ITEMSIZE(a);
}

static int arrays_overlap(PyArrayObject *a, PyArrayObject *b) {
  uintptr_t al, ah, bl, bh;
  array_extent(a, &al, &ah);
  array_extent(b, &bl, &bh);
  return al < bh && bl < ah;
}

/* The output array: `out` checked (float32, native, the image's shape, writeable,
 * C-contiguous) and returned as a new reference, or a new one. */
static PyArrayObject *out_array(PyObject *out, PyArrayObject *img) {
  int nd = PyArray_NDIM(img);
  if (out == NULL || out == Py_None)
    return (PyArrayObject *)PyArray_SimpleNew(nd, PyArray_DIMS(img), NPY_FLOAT32);
  if (!PyArray_Check(out)) {
    PyErr_SetString(PyExc_TypeError, "out: must be a NumPy array of float32");
    return NULL;
  }
  PyArrayObject *o = (PyArrayObject *)out;
  if (PyArray_TYPE(o) != NPY_FLOAT32 || !PyArray_ISNOTSWAPPED(o)) {
    PyObject *d = PyObject_Str((PyObject *)PyArray_DESCR(o));
    PyErr_Format(PyExc_TypeError, "out dtype %S: must be float32 (native byte order)",
                 d ? d : Py_None);
    Py_XDECREF(d);
    return NULL;
  }
  if (PyArray_NDIM(o) != nd ||
      memcmp(PyArray_DIMS(o), PyArray_DIMS(img), sizeof(npy_intp) * (size_t)nd) != 0) {
    PyObject *want = PyObject_GetAttrString((PyObject *)img, "shape");
    PyObject *got = PyObject_GetAttrString(out, "shape");
    PyErr_Format(PyExc_ValueError, "out shape %S: must be the image's, %S", got ? got : Py_None,
                 want ? want : Py_None);
    Py_XDECREF(want);
    Py_XDECREF(got);
    return NULL;
  }
  if (!PyArray_ISWRITEABLE(o)) {
    PyErr_SetString(PyExc_ValueError, "out is read-only");
    return NULL;
  }
  if (!PyArray_IS_C_CONTIGUOUS(o) || !PyArray_ISALIGNED(o)) {
    PyErr_SetString(PyExc_ValueError, "out must be C-contiguous (and aligned)");
    return NULL;
  }
  Py_INCREF(o);
  return o;
}

/* ---- Computing. ---- */

/* The map of one 2-D image into out (rows of `width` floats), in bands of rows when it is
 * large. Called with the GIL released (*save); takes it back between bands to look for
 * signals. Returns ES_OK, a library status (message in msg), or 1: a Python exception is
 * set (a signal's). */
static int compute_map(es_context *ctx, const es_image *img, float *out, int radius,
                       double img_range_lo, PyThreadState **save, char *msg, size_t msglen) {
  int64_t w = img->width, h = img->height;
  int64_t band = band_pixels / w;
  if (band < 1) band = 1;
  /* Float samples of their own range: its min and max are the whole image's, which a band
   * does not see, so one call. */
  const int whole = img->depth == 32 && isnan(img_range_lo);
  if (band >= h || whole) {
    int rc = es_compute(ctx, img, out, (size_t)w, NULL, NULL, NULL);
    if (rc) snprintf(msg, msglen, "%s", es_context_error(ctx));
    return rc;
  }
  /* Each band is computed with up to `radius` rows of real image above and below it: every
   * window of its own rows then sees exactly what it sees in the whole image (clip and
   * reflect alike), so the bands' rows are the one call's bits. */
  float *tmp = PyMem_RawMalloc(sizeof(float) * (size_t)w * (size_t)(band + 2 * radius));
  if (!tmp) {
    snprintf(msg, msglen, "out of memory for a band of %lld rows", (long long)band);
    return ES_ERR_NOMEM;
  }
  int rc = ES_OK;
  for (int64_t y0 = 0; y0 < h; y0 += band) {
    int64_t y1 = y0 + band < h ? y0 + band : h;
    int64_t top = y0 - radius > 0 ? y0 - radius : 0;
    int64_t bot = y1 + radius < h ? y1 + radius : h;
    es_image sub = *img;
    sub.data = (const unsigned char *)img->data + img->stride * (size_t)top;
    sub.height = (int)(bot - top);
    if (img->mask) sub.mask = img->mask + img->mask_stride * (size_t)top;
    rc = es_compute(ctx, &sub, tmp, (size_t)w, NULL, NULL, NULL);
    if (rc) {
      snprintf(msg, msglen, "%s", es_context_error(ctx));
      break;
    }
    memcpy(out + (size_t)(y0 * w), tmp + (size_t)((y0 - top) * w),
           sizeof(float) * (size_t)((y1 - y0) * w));
    PyEval_RestoreThread(*save);
    int sig = PyErr_CheckSignals();
    *save = PyEval_SaveThread();
    if (sig) {
      rc = 1;
      break;
    }
  }
  PyMem_RawFree(tmp);
  return rc;
}

/* A dict of one frame's statistics. */
PyObject *stats_dict(const es_stats *s, double hmax) {
  npy_intp n = s->bins;
  PyObject *hist = PyArray_SimpleNew(1, &n, NPY_UINT64);
  if (!hist) return NULL;
  memcpy(PyArray_DATA((PyArrayObject *)hist), s->hist, sizeof(uint64_t) * (size_t)n);
  PyObject *d = Py_BuildValue("{s:L,s:d,s:d,s:d,s:d,s:d,s:d,s:i,s:N,s:d}", "count",
                              (long long)s->count, "mean", s->mean, "std", s->std, "min",
                              (double)s->min, "max", (double)s->max, "global_entropy",
                              s->global_entropy, "global_entropy_levels",
                              s->global_entropy_levels, "bins", s->bins, "hist", hist, "hmax",
                              hmax);
  return d;
}

/* A 3-D stack [T, H, W] through the stream: frames pushed in order (lent from the array, no
 * copy), results pulled in order into out[t] (want_map) and stats[t] (want_stats). Called
 * with the GIL released; takes it back between frames for signals. Returns as compute_map. */
static int compute_stack(es_context *ctx, PyArrayObject *img, int depth, const uint8_t *mask,
                         int mask3d, float *out, es_stats *stats, PyThreadState **save,
                         char *msg, size_t msglen) {
  npy_intp *dims = PyArray_DIMS(img);
  int64_t t_n = dims[0], h = dims[1], w = dims[2];
  es_stream *s = NULL;
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = out != NULL;
  sc.want_stats = stats != NULL;
  sc.render.format = ES_PIX_NONE;
  sc.max_width = (int)w;
  sc.max_height = (int)h;
  sc.depth = depth;
  int rc = es_stream_open(ctx, &sc, &s);
  if (rc) {
    snprintf(msg, msglen, "%s", es_context_error(ctx));
    return rc;
  }
  /* One thread pushes and pulls: it acquires only while a frame of the pool is free (every
   * frame pushed and not yet pulled is out), or that acquire would wait forever. */
  int pool = es_context_config(ctx)->queue;
  if (pool < 2) pool = es_config_queue(es_context_config(ctx));
  int64_t pushed = 0, pulled = 0;
  size_t stride = row_stride(img);
  while (pulled < t_n) {
    if (pushed < t_n && pushed - pulled < pool) {
      es_frame *f = NULL;
      rc = es_stream_acquire(s, &f);
      if (rc) break;
      f->width = (int)w;
      f->height = (int)h;
      f->depth = depth;
      f->stride = stride;
      f->lend = (const unsigned char *)PyArray_DATA(img) + PyArray_STRIDES(img)[0] * pushed;
      f->lend_release = NULL; /* the caller keeps the array alive for the call */
      if (mask) { /* one mask for every frame, or one a frame [T, H, W] */
        f->mask = mask + (mask3d ? (size_t)(pushed * h * w) : 0);
        f->mask_stride = (size_t)w;
      }
      f->pts = pushed;
      f->pts_seconds = NAN;
      rc = es_stream_push(s, f);
      if (rc) {
        es_stream_release(s, f);
        break;
      }
      pushed++;
      if (pushed == t_n) es_stream_finish(s);
      continue;
    }
    es_frame *f = NULL;
    rc = es_stream_pull(s, &f);
    if (rc) break;
    if (f->status != ES_OK) {
      rc = f->status;
      es_stream_release(s, f);
      break;
    }
    if (out) {
      for (int64_t y = 0; y < h; y++)
        memcpy(out + (size_t)((pulled * h + y) * w), f->map + (size_t)y * f->map_stride,
               sizeof(float) * (size_t)w);
    }
    if (stats) stats[pulled] = f->stats;
    es_stream_release(s, f);
    pulled++;
    PyEval_RestoreThread(*save);
    int sig = PyErr_CheckSignals();
    *save = PyEval_SaveThread();
    if (sig) {
      rc = 1;
      break;
    }
  }
  if (rc && rc != 1) snprintf(msg, msglen, "%s", es_context_error(ctx));
  if (rc) es_stream_abort(s);
  es_stream_destroy(&s);
  return rc;
}

/* What entropy and stats share: the image and the context, and which to run. */
static PyObject *run(PyObject *image, PyObject *out_obj, const call_args *a, int want_map,
                     int want_stats) {
  int depth = 8, rc = ES_OK, own = 0;
  char msg[512] = "";
  PyArrayObject *img = NULL, *out = NULL;
  es_stats *stats = NULL;
  es_context *ctx = NULL;
  PyObject *result = NULL;
  PyArrayObject *mask = NULL;
  img = image_array(image, &depth);
  if (!img) goto end;
  if (!check_levels(a, depth)) goto end;
  int nd = PyArray_NDIM(img);
  if (a->mask && a->mask != Py_None) {
    /* entropy_stream's wrapper made it C-contiguous uint8 (non-zero = inside); [H, W], or
     * [T, H, W] for a stack (one a frame). */
    if (!PyArray_Check(a->mask) || PyArray_TYPE((PyArrayObject *)a->mask) != NPY_UINT8 ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a->mask)) {
      PyErr_SetString(PyExc_TypeError, "mask: must be a C-contiguous uint8 array");
      goto end;
    }
    mask = (PyArrayObject *)a->mask;
    int mnd = PyArray_NDIM(mask);
    npy_intp *md = PyArray_DIMS(mask), *id = PyArray_DIMS(img);
    int ok = (mnd == 2 || (mnd == 3 && nd == 3)) && md[mnd - 1] == id[nd - 1] &&
             md[mnd - 2] == id[nd - 2] && (mnd == 2 || md[0] == id[0]);
    if (!ok) {
      PyObject *ms = PyObject_GetAttrString(a->mask, "shape");
      PyObject *is = PyObject_GetAttrString((PyObject *)img, "shape");
      PyErr_Format(PyExc_ValueError, "mask shape %S: must be the image's %S (or a frame's, for "
                   "a stack)", ms ? ms : Py_None, is ? is : Py_None);
      Py_XDECREF(ms);
      Py_XDECREF(is);
      goto end;
    }
  }
  int64_t frames = nd == 3 ? PyArray_DIMS(img)[0] : 1;
  if (want_map) {
    out = out_array(out_obj, img);
    if (!out) goto end;
    if (arrays_overlap(out, img)) { /* written while read (in bands): read a copy */
      PyArrayObject *copy = (PyArrayObject *)PyArray_NewCopy(img, NPY_CORDER);
      if (!copy) goto end;
      Py_SETREF(img, copy);
    }
  }
  if (want_stats) {
    stats = PyMem_RawCalloc((size_t)frames, sizeof *stats);
    if (!stats) {
      PyErr_NoMemory();
      goto end;
    }
  }
  es_image in = {PyArray_DATA(img), (int)PyArray_DIMS(img)[nd - 1],
                 (int)PyArray_DIMS(img)[nd - 2], row_stride(img), depth,
                 mask ? (const uint8_t *)PyArray_DATA(mask) : NULL,
                 mask ? (size_t)PyArray_DIMS(img)[nd - 1] : 0};
  float *map = out ? (float *)PyArray_DATA(out) : NULL;
  PyThreadState *save = PyEval_SaveThread();
  rc = context_get(&a->key, &ctx, &own, msg, sizeof msg);
  if (rc == ES_OK) {
    if (nd == 3)
      rc = compute_stack(ctx, img, depth, in.mask, mask && PyArray_NDIM(mask) == 3, map, stats,
                         &save, msg, sizeof msg);
    else if (want_stats)
      rc = es_compute(ctx, &in, map, (size_t)in.width, stats, NULL, NULL);
    else
      rc = compute_map(ctx, &in, map, (a->key.params.window - 1) / 2, a->key.params.in_lo,
                       &save, msg, sizeof msg);
    if (rc < 0 && !msg[0]) snprintf(msg, sizeof msg, "%s", es_context_error(ctx));
  }
  if (own) es_context_destroy(&ctx);
  PyEval_RestoreThread(save);
  if (rc == 1) goto end; /* a Python exception (a signal) */
  if (rc) {
    raise_status(rc, msg);
    goto end;
  }
  if (!want_stats) {
    result = (PyObject *)out;
    out = NULL;
    goto end;
  }
  es_params p = a->key.params;
  double hmax = es_params_hmax(&p);
  PyObject *st;
  if (nd == 2) {
    st = stats_dict(&stats[0], hmax);
  } else {
    st = PyList_New(frames);
    for (int64_t t = 0; st && t < frames; t++) {
      PyObject *d = stats_dict(&stats[t], hmax);
      if (!d) {
        Py_CLEAR(st);
        break;
      }
      PyList_SET_ITEM(st, t, d);
    }
  }
  if (!st) goto end;
  if (want_map) {
    result = Py_BuildValue("(NN)", (PyObject *)out, st);
    out = NULL;
  } else {
    result = st;
  }
end:
  PyMem_RawFree(stats);
  Py_XDECREF(img);
  Py_XDECREF(out);
  return result;
}

static PyObject *py_entropy(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *names[] = {"image", "window", "shape", "border", "levels", "base", "mask",
                          "device", "out", "threads", "in_lo", "in_hi", "mask_computed", NULL};
  PyObject *image, *shape = NULL, *border = NULL, *base = NULL, *mask = Py_None,
                   *device = NULL, *out = Py_None;
  int window = 5, levels = 16, threads = 0, mask_computed = 0;
  double in_lo = NAN, in_hi = NAN;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$iOOiOOOOiddp:entropy", names, &image, &window,
                                   &shape, &border, &levels, &base, &mask, &device, &out,
                                   &threads, &in_lo, &in_hi, &mask_computed))
    return NULL;
  call_args a;
  if (!parse_common(shape, border, base, device, window, levels, threads, 16, &a) ||
      !parse_float_rule(in_lo, in_hi, mask_computed, &a))
    return NULL;
  a.mask = mask;
  return run(image, out, &a, 1, 0);
}

static PyObject *py_stats(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *names[] = {"image", "window", "shape", "border", "levels", "base", "mask",
                          "device", "bins", "threads", "with_map", "in_lo", "in_hi", NULL};
  PyObject *image, *shape = NULL, *border = NULL, *base = NULL, *mask = Py_None,
                   *device = NULL;
  int window = 5, levels = 16, threads = 0, bins = 16, with_map = 0;
  double in_lo = NAN, in_hi = NAN;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$iOOiOOOiipdd:stats", names, &image, &window,
                                   &shape, &border, &levels, &base, &mask, &device, &bins,
                                   &threads, &with_map, &in_lo, &in_hi))
    return NULL;
  call_args a;
  if (!parse_common(shape, border, base, device, window, levels, threads, bins, &a) ||
      !parse_float_rule(in_lo, in_hi, 0, &a))
    return NULL;
  a.mask = mask;
  return run(image, Py_None, &a, with_map, 1);
}

/* The one-shot on GPU memory (es_compute_device): pointers and geometry of a CUDA array the
 * Python side has checked (entropy_stream._cuda), on GPU `device_id`. Returns None, or the
 * stats dict with want_stats. */
static PyObject *py_entropy_device(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  static char *names[] = {"in_ptr", "height", "width", "stride", "depth", "out_ptr",
                          "device_id", "window", "shape", "border", "levels", "base",
                          "bins", "want_stats", "mask_ptr", NULL};
  unsigned long long in_ptr, out_ptr, mask_ptr = 0;
  int height, width, depth, device_id, window = 5, levels = 16, bins = 16, want_stats = 0;
  Py_ssize_t stride;
  PyObject *shape = NULL, *border = NULL, *base = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "KiiniKi|$iOOiOipK:entropy_device", names,
                                   &in_ptr, &height, &width, &stride, &depth, &out_ptr,
                                   &device_id, &window, &shape, &border, &levels, &base, &bins,
                                   &want_stats, &mask_ptr))
    return NULL;
  if (!shape || !border || !base) {
    PyErr_SetString(PyExc_TypeError, "entropy_device: shape, border and base are required");
    return NULL;
  }
  call_args a;
  if (!parse_common(shape, border, base, NULL, window, levels, 0, bins, &a)) return NULL;
  a.key.device = ES_DEVICE_GPU;
  if (!check_levels(&a, depth)) return NULL;
  if (stride <= 0 || height < 1 || width < 1) {
    PyErr_SetString(PyExc_ValueError, "CUDA array: empty, or rows not at a positive stride");
    return NULL;
  }
  /* mask_ptr: 0, or width x height bytes on the GPU, tight rows (entropy_stream._cuda) */
  es_image img = {(const void *)(uintptr_t)in_ptr, width, height, (size_t)stride, depth,
                  (const uint8_t *)(uintptr_t)mask_ptr, mask_ptr ? (size_t)width : 0};
  es_stats st;
  es_context *ctx = NULL;
  char msg[512] = "";
  int own = 0, rc;
  Py_BEGIN_ALLOW_THREADS
  rc = context_get(&a.key, &ctx, &own, msg, sizeof msg);
  if (rc == ES_OK) {
    rc = es_compute_device(ctx, device_id, &img, (float *)(uintptr_t)out_ptr, (size_t)width,
                           want_stats ? &st : NULL);
    if (rc) snprintf(msg, sizeof msg, "%s", es_context_error(ctx));
  }
  if (own) es_context_destroy(&ctx);
  Py_END_ALLOW_THREADS
  if (rc) {
    raise_status(rc, msg);
    return NULL;
  }
  if (want_stats) return stats_dict(&st, es_params_hmax(&a.key.params));
  Py_RETURN_NONE;
}

static PyObject *py_set_band_pixels(PyObject *self, PyObject *arg) {
  (void)self;
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  if (n < 1) {
    PyErr_SetString(PyExc_ValueError, "band pixels: must be >= 1");
    return NULL;
  }
  long long old = (long long)band_pixels;
  band_pixels = n;
  return PyLong_FromLongLong(old);
}

static PyObject *py_version_info(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  char buf[4096];
  es_version_info(buf, sizeof buf);
  return PyUnicode_FromString(buf);
}

static PyMethodDef methods[] = {
    {"entropy", (PyCFunction)(void (*)(void))py_entropy, METH_VARARGS | METH_KEYWORDS,
     "entropy(image, *, window=5, shape='square', border='clip', levels=16, base=2, "
     "mask=None, device='auto', out=None, threads=0)\n\nSee entropy_stream.entropy."},
    {"stats", (PyCFunction)(void (*)(void))py_stats, METH_VARARGS | METH_KEYWORDS,
     "stats(image, *, window=5, shape='square', border='clip', levels=16, base=2, "
     "mask=None, device='auto', bins=16, threads=0, with_map=False)\n\nSee "
     "entropy_stream.stats."},
    {"entropy_device", (PyCFunction)(void (*)(void))py_entropy_device,
     METH_VARARGS | METH_KEYWORDS,
     "entropy_device(in_ptr, height, width, stride, depth, out_ptr, device_id, *, window, "
     "shape, border, levels, base, bins, want_stats)\n\nThe one-shot on GPU memory; used by "
     "entropy_stream for CUDA arrays (CuPy)."},
    {"_set_band_pixels", py_set_band_pixels, METH_O,
     "Sets the pixels of a band of rows (tests); returns the previous value."},
    {"version_info", py_version_info, METH_NOARGS,
     "The library's version, its libraries, CUDA and GPUs, and OpenMP threads."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "entropy_stream._core",
                                    "C half of entropy_stream (see entropy_stream).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  if (!ctx_lock) {
    ctx_lock = PyThread_allocate_lock();
    if (!ctx_lock) return PyErr_NoMemory();
  }
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (PyModule_AddStringConstant(m, "LIBRARY_VERSION", ES_VERSION_STRING) < 0 ||
      PyModule_AddIntConstant(m, "WINDOW_MAX", ES_WINDOW_MAX) < 0 || es_py_open_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

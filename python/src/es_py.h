/*
 * es_py.h - what the files of entropy_stream._core share: core.c (arrays through the
 * one-shot and the stream: entropy, stats) and open.c (es.open: a video through the
 * library's run). Internal to the extension.
 */
#ifndef ES_PY_H
#define ES_PY_H

#include <Python.h>

#include "entropy_stream.h"

/* What a call computes with: the key of core.c's context cache. */
typedef struct ctx_key {
  es_params params;
  int device;     /* enum es_device */
  int threads;    /* 0: all cores */
  int stats_bins; /* 1..ES_STATS_MAX_BINS */
} ctx_key;

typedef struct call_args {
  ctx_key key;
  PyObject *mask;
} call_args;

/* The keyword arguments every call shares, checked (ValueError naming the argument and its
 * allowed range); NULL for a choice not given: its default. Returns 1, or 0 with the
 * exception set. levels is stored unchecked: its range depends on the input. */
int parse_common(PyObject *shape, PyObject *border, PyObject *base, PyObject *device,
                 int window, int levels, int threads, int bins, call_args *a);
/* A dict of one frame's statistics (the one es.stats returns), or NULL with an exception. */
PyObject *stats_dict(const es_stats *s, double hmax);
/* Raises the Python exception of a library status, "entropy-stream: what". */
void raise_status(int rc, const char *what);

/* open.c: adds the Run type, _core.open_run and _core._open_live_maps (tests) to the
 * module. 0, or -1 with an exception set. */
int es_py_open_init(PyObject *module);

#endif

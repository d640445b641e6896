/*
 * params.c - each parameter's rule, written once: the range of a number parameter and the
 * names of an enumerated one, with messages that name the parameter as the library spells it
 * ("window 4: must be odd, 1..255"), never a program's flag. The CLI maps the name to its
 * flag (--window), the Python module to its keyword (window=); both parse names through the
 * tables here, so that a name or a bound added here is taken by every caller at once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "es_types.h"

/* A number parameter: lo..hi, odd where `odd` is set; `why` follows the range in the rule
 * (what 0 means, the unit). The rule's text is made from the bounds, so that the two cannot
 * disagree. */
typedef struct num_rule {
  const char *name;
  int64_t lo, hi;
  int odd;
  const char *why;
} num_rule;

static const num_rule g_num[] = {
  {"window", 1, ES_WINDOW_MAX, 1, ""},
  {"levels", 2, 65536, 0, ""},
  {"stats_bins", 1, ES_STATS_MAX_BINS, 0, ""},
  {"threads", 0, 4096, 0, " (0 = all cores)"},
  /* The library's bound (es_config.queue, 0 there: the default); the CLI caps its --queue
   * lower with cli_queue (a stage's frames are the memory a run holds). */
  {"queue", 1, 4096, 0, ""},
  {"gpu", 0, ES_MAX_GPUS - 1, 0, ""},
  {"cpu_below", 0, INT64_C(1) << 62, 0, " pixels"},
  {"max_pixels", 1, INT64_C(1) << 62, 0, ""},
  {"crf", 0, 63, 0, ""},
  {"band", 0, 65535, 0, ""},
  {"band_rows", 0, 1 << 30, 0, " (0: from a 256 MiB budget)"},
  {"level", 0, 63, 0, ""},
  {"mask_computed", 0, 1, 0, ""},
};

/* An enumerated parameter: its names, in the order they are listed, with their values. */
typedef struct name_value {
  const char *name;
  int value;
} name_value;
typedef struct enum_rule {
  const char *name;
  const name_value *v;
  int n;
} enum_rule;

static const name_value g_shape[] = {{"square", ES_SHAPE_SQUARE}, {"disk", ES_SHAPE_DISK}};
static const name_value g_border[] = {{"clip", ES_BORDER_CLIP}, {"reflect", ES_BORDER_REFLECT}};
static const name_value g_base[] = {{"2", ES_BASE_2}, {"e", ES_BASE_E}};
static const name_value g_device[] = {
  {"auto", ES_DEVICE_AUTO}, {"gpu", ES_DEVICE_GPU}, {"cpu", ES_DEVICE_CPU}};
static const name_value g_colormap[] = {{"inferno", ES_CMAP_INFERNO}, {"viridis", ES_CMAP_VIRIDIS},
                                        {"magma", ES_CMAP_MAGMA},     {"turbo", ES_CMAP_TURBO},
                                        {"gray", ES_CMAP_GRAY}};
static const name_value g_range[] = {{"fixed", 0}, {"auto", 1}}; /* es_render.range_auto */
static const name_value g_pix_fmt[] = {{"yuv420p", ES_PIX_YUV420P}, {"yuv444p", ES_PIX_YUV444P}};

#define ES_ENUM(n, t) {n, t, (int)(sizeof t / sizeof t[0])}
static const enum_rule g_enum[] = {
  ES_ENUM("shape", g_shape),   ES_ENUM("border", g_border), ES_ENUM("base", g_base),
  ES_ENUM("device", g_device), ES_ENUM("colormap", g_colormap), ES_ENUM("range", g_range),
  ES_ENUM("pix_fmt", g_pix_fmt),
};
#undef ES_ENUM

/* Parameters checked elsewhere in one piece but named here, so that their messages are
 * recognised as naming a parameter (es_param_ref): in_range (es_params_check), overlay (a
 * real number, es_param_check_real), gpus (a list), shard (es_shard_parse), stats (a path);
 * a video output's codec, preset (libavcodec's names: the encoder checks them) and format
 * (heat, gray8, gray16, f32: a program's choice of es_pix), and raw (frames on standard
 * input, gray8:WxH[@FPS], parsed where they are read). */
static const char *const g_other[] = {"in_range", "overlay", "gpus",   "shard", "stats",
                                      "codec",    "preset",  "format", "raw"};

static const num_rule *num_find(const char *name) {
  for (size_t i = 0; name && i < sizeof g_num / sizeof g_num[0]; i++)
    if (!strcmp(name, g_num[i].name)) return &g_num[i];
  return NULL;
}

static const enum_rule *enum_find(const char *name) {
  for (size_t i = 0; name && i < sizeof g_enum / sizeof g_enum[0]; i++)
    if (!strcmp(name, g_enum[i].name)) return &g_enum[i];
  return NULL;
}

/* msg may be NULL (only the status wanted). */
static void put(char *msg, size_t len, const char *fmt, const char *a, const char *b) {
  if (msg && len) snprintf(msg, len, fmt, a, b);
}

int es_param_rule(const char *name, char *buf, size_t len) {
  const num_rule *r = num_find(name);
  const enum_rule *e = enum_find(name);
  char tmp[8];
  if (!buf || !len) {
    buf = tmp;
    len = sizeof tmp;
  }
  *buf = 0;
  if (r) {
    snprintf(buf, len, "must be %s%" PRId64 "..%" PRId64 "%s", r->odd ? "odd, " : "", r->lo, r->hi,
             r->why);
    return ES_OK;
  }
  if (name && !strcmp(name, "overlay")) {
    snprintf(buf, len, "must be 0..1");
    return ES_OK;
  }
  if (!e) return ES_ERR_USAGE;
  size_t at = (size_t)snprintf(buf, len, "must be ");
  if (at < len) es_param_names(name, "", buf + at, len - at);
  return ES_OK;
}

int es_param_check(const char *name, int64_t v, char *msg, size_t msglen) {
  const num_rule *r = num_find(name);
  char rule[96], val[24];
  if (!r) {
    put(msg, msglen, "%s%s: not a number parameter", name ? name : "(null)", "");
    return ES_ERR_USAGE;
  }
  if (v >= r->lo && v <= r->hi && (!r->odd || v % 2 != 0)) return ES_OK;
  es_param_rule(name, rule, sizeof rule);
  snprintf(val, sizeof val, "%" PRId64, v);
  if (msg && msglen) snprintf(msg, msglen, "%s %s: %s", name, val, rule);
  return ES_ERR_USAGE;
}

int es_param_check_real(const char *name, double v, char *msg, size_t msglen) {
  if (!name || strcmp(name, "overlay")) {
    put(msg, msglen, "%s%s: not a real-number parameter", name ? name : "(null)", "");
    return ES_ERR_USAGE;
  }
  if (v >= 0.0 && v <= 1.0) return ES_OK; /* NaN fails both */
  if (msg && msglen) snprintf(msg, msglen, "overlay %g: must be 0..1", v);
  return ES_ERR_USAGE;
}

int es_param_parse(const char *name, const char *text, int *value, char *msg, size_t msglen) {
  const enum_rule *e = enum_find(name);
  char rule[96];
  if (!e) {
    put(msg, msglen, "%s%s: not an enumerated parameter", name ? name : "(null)", "");
    return ES_ERR_USAGE;
  }
  for (int i = 0; text && i < e->n; i++) {
    if (!strcmp(text, e->v[i].name)) {
      if (value) *value = e->v[i].value;
      return ES_OK;
    }
  }
  es_param_rule(name, rule, sizeof rule);
  if (msg && msglen) snprintf(msg, msglen, "%s %s: %s", name, text ? text : "(null)", rule);
  return ES_ERR_USAGE;
}

int es_param_check_enum(const char *name, int value, char *msg, size_t msglen) {
  const enum_rule *e = enum_find(name);
  char rule[96], val[16];
  if (!e) {
    put(msg, msglen, "%s%s: not an enumerated parameter", name ? name : "(null)", "");
    return ES_ERR_USAGE;
  }
  if (es_param_name_of(name, value)) return ES_OK;
  es_param_rule(name, rule, sizeof rule);
  snprintf(val, sizeof val, "%d", value);
  if (msg && msglen) snprintf(msg, msglen, "%s %s: %s", name, val, rule);
  return ES_ERR_USAGE;
}

const char *es_param_name_of(const char *name, int value) {
  const enum_rule *e = enum_find(name);
  for (int i = 0; e && i < e->n; i++)
    if (e->v[i].value == value) return e->v[i].name;
  return NULL;
}

int es_param_names(const char *name, const char *quote, char *buf, size_t len) {
  const enum_rule *e = enum_find(name);
  size_t at = 0;
  if (!quote) quote = "";
  if (buf && len) *buf = 0;
  if (!e) return ES_ERR_USAGE;
  for (int i = 0; buf && i < e->n && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s%s%s", i == 0 ? "" : i == e->n - 1 ? " or " : ", ",
                           quote, e->v[i].name, quote);
  return ES_OK;
}

size_t es_param_ref(const char *s) {
  size_t n;
  if (!s) return 0;
  n = strspn(s, "abcdefghijklmnopqrstuvwxyz_");
  if (!n) return 0;
  if (s[n] == ' ') { /* "NAME VALUE:" or "(NAME VALUE)": not "level 3 is 4000 x 3000" */
    size_t v = strcspn(s + n + 1, " ");
    if (!v || (s[n + v] != ':' && s[n + v] != ')')) return 0; /* "shard : ...": an empty value */
  } else if (s[n] != ':') {
    return 0;
  }
  for (size_t i = 0; i < sizeof g_num / sizeof g_num[0]; i++)
    if (strlen(g_num[i].name) == n && !strncmp(s, g_num[i].name, n)) return n;
  for (size_t i = 0; i < sizeof g_enum / sizeof g_enum[0]; i++)
    if (strlen(g_enum[i].name) == n && !strncmp(s, g_enum[i].name, n)) return n;
  for (size_t i = 0; i < sizeof g_other / sizeof g_other[0]; i++)
    if (strlen(g_other[i]) == n && !strncmp(s, g_other[i], n)) return n;
  return 0;
}

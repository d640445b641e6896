/*
 * test_io_colormap.c - the colormap tables: names and ids both ways, gray is the identity,
 * known end points of each map, and every table against matplotlib's own data
 * (round(x * 255), as tools/gen-colormaps.py generates them) when python3-matplotlib is
 * installed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "es_kernels.h"
#include "es_test.h"

int main(void) {
  es_test_seed("test_io_colormap");
  static const char *names[] = {"inferno", "viridis", "magma", "turbo", "gray"};
  for (int i = 0; i < 5; i++) {
    CHECK(es_colormap_from_name(names[i]) == i, "%s -> %d", names[i], es_colormap_from_name(names[i]));
    CHECK(!strcmp(es_colormap_name(i), names[i]), "%d -> %s", i, es_colormap_name(i));
    CHECK(es_colormap_lut(i) != NULL, "no lut for %s", names[i]);
  }
  CHECK(es_colormap_from_name("jet") == -1 && es_colormap_from_name("") == -1 &&
            es_colormap_from_name(NULL) == -1 && es_colormap_from_name("Inferno") == -1,
        "unknown names");
  CHECK(es_colormap_lut(-1) == NULL && es_colormap_lut(5) == NULL, "unknown ids");
  CHECK(es_colormap_name(99) != NULL, "name of an unknown id is NULL");
  const uint8_t *g = es_colormap_lut(ES_CMAP_GRAY);
  for (int i = 0; g && i < 256; i++)
    if (g[3 * i] != i || g[3 * i + 1] != i || g[3 * i + 2] != i) {
      CHECK(0, "gray[%d] = %d,%d,%d", i, g[3 * i], g[3 * i + 1], g[3 * i + 2]);
      break;
    }
  /* matplotlib's end points: inferno (0,0,4)..(252,255,164), viridis (68,1,84)..(253,231,37),
   * magma (0,0,4)..(252,253,191), turbo (48,18,59)..(122,4,3) */
  static const uint8_t ends[4][6] = {{0, 0, 4, 252, 255, 164},
                                     {68, 1, 84, 253, 231, 37},
                                     {0, 0, 4, 252, 253, 191},
                                     {48, 18, 59, 122, 4, 3}};
  for (int m = 0; m < 4; m++) {
    const uint8_t *l = es_colormap_lut(m);
    if (!l) continue;
    CHECK(!memcmp(l, ends[m], 3) && !memcmp(l + 765, ends[m] + 3, 3),
          "%s ends %d,%d,%d .. %d,%d,%d", names[m], l[0], l[1], l[2], l[765], l[766], l[767]);
  }
  /* inferno, viridis, magma are perceptually uniform: luminance rises monotonically */
  for (int m = 0; m < 3; m++) {
    const uint8_t *l = es_colormap_lut(m);
    double prev = -1;
    for (int i = 0; l && i < 256; i++) {
      double y = 0.2126 * l[3 * i] + 0.7152 * l[3 * i + 1] + 0.0722 * l[3 * i + 2];
      if (y + 1.0 < prev) {
        CHECK(0, "%s luminance falls at %d", names[m], i);
        break;
      }
      prev = y;
    }
  }
  /* the whole tables against matplotlib */
  const char *py = getenv("ES_PYTHON3");
  if (!py || !*py) py = "/usr/bin/python3";
  char tmp[] = "/tmp/es_test_cmap.XXXXXX";
  int fd = mkstemp(tmp);
  if (fd >= 0 && access(py, X_OK) == 0) {
    FILE *f = fdopen(fd, "w");
    for (int m = 0; m < 4; m++) {
      const uint8_t *l = es_colormap_lut(m);
      for (int i = 0; l && i < 768; i++) fprintf(f, "%d%c", l[i], i == 767 ? '\n' : ' ');
    }
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import sys\n"
             "try:\n import matplotlib._cm_listed as c\nexcept ImportError: sys.exit(77)\n"
             "lines=open('%s').read().split(chr(10))\n"
             "for k, n in enumerate(['inferno','viridis','magma','turbo']):\n"
             "  want=[int(x*255.0+0.5) for rgb in getattr(c,'_%%s_data'%%n) for x in rgb]\n"
             "  got=[int(v) for v in lines[k].split()]\n"
             "  assert got==want, n\n"
             "print('matplotlib tables: ok')\"",
             py, tmp);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (rc == 77) printf("matplotlib not installed: table comparison skipped\n");
    else CHECK(rc == 0, "tables differ from matplotlib's");
  } else if (fd >= 0) {
    close(fd);
  }
  unlink(tmp);
  return es_test_done("test_io_colormap");
}

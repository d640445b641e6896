/*
 * cli_mask.c - --mask FILE: the mask read once, through the still-image reader the inputs
 * take, into one byte a pixel (non-zero sample = inside), and handed to every stream as its
 * mask for every frame (the stream refuses a frame of another size: exit 2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* es_still_read_to's destination: a buffer of the image's size, malloc'd here. */
static int mask_dest(void *user, int width, int height, int depth, void **dst,
                     size_t *dst_stride, char *msg, size_t len) {
  void **data = user;
  const size_t row = (size_t)width * (size_t)(depth / 8);
  *data = malloc(row * (size_t)height);
  if (!*data) {
    snprintf(msg, len, "out of memory for a %dx%d mask", width, height);
    return ES_ERR_NOMEM;
  }
  *dst = *data;
  *dst_stride = row;
  return ES_OK;
}

int cli_mask_load(cli_opts *o) {
  char msg[MSG_LEN] = "";
  es_image img;
  void *data = NULL;
  memset(&img, 0, sizeof img);
  /* Any still format the inputs take (PNG, JPEG, TIFF, ...), by the same dispatch. */
  int rc = es_still_read_to(o->mask_path, o->max_pixels, mask_dest, &data, &img, msg,
                            sizeof msg);
  if (rc != ES_OK) {
    free(data); /* where the reader failed after its destination was made */
    return cli_fail(o->mask_path, rc, msg);
  }
  o->mask = malloc((size_t)img.width * (size_t)img.height);
  if (!o->mask) {
    free(data);
    cli_err(o->mask_path, "out of memory for a %dx%d mask", img.width, img.height);
    return es_exit_code(ES_ERR_NOMEM);
  }
  for (int y = 0; y < img.height; y++)
    for (int x = 0; x < img.width; x++)
      o->mask[(size_t)y * img.width + x] = es_image_sample(&img, x, y) != 0;
  o->mask_w = img.width;
  o->mask_h = img.height;
  free(data);
  return 0;
}

/*
 * mask.c - es_mask_read: a mask image read once, through the still-image reader the inputs
 * take, into one byte a pixel (non-zero sample = inside), the form every stream and run
 * takes as its mask for every frame (the stream refuses a frame of another size).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_kernels.h"

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

int es_mask_read(const char *path, int64_t max_pixels, uint8_t **mask, int *width, int *height,
                 char *msg, size_t len) {
  es_image img;
  void *data = NULL;
  int rc;
  memset(&img, 0, sizeof img);
  *mask = NULL;
  /* Any still format the inputs take (PNG, JPEG, TIFF, ...), by the same dispatch. */
  rc = es_still_read_to(path, max_pixels, mask_dest, &data, &img, msg, len);
  if (rc != ES_OK) goto end; /* data: where the reader failed after its destination was made */
  if (!(*mask = malloc((size_t)img.width * (size_t)img.height))) {
    snprintf(msg, len, "out of memory for a %dx%d mask", img.width, img.height);
    rc = ES_ERR_NOMEM;
    goto end;
  }
  for (int y = 0; y < img.height; y++)
    for (int x = 0; x < img.width; x++)
      (*mask)[(size_t)y * img.width + x] = es_image_sample(&img, x, y) != 0;
  *width = img.width;
  *height = img.height;
end:
  free(data);
  return rc;
}

// Does the size of the writes that filled a file change the cost of later 8 KiB write+sync cycles?
// Two files in DIR with the same content and size (16 MiB), one filled in CHUNK_A_KIB writes, one in
// CHUNK_B_KIB writes, both fsynced; then 8 KiB pwrite at offset 0 + SYNC (fdatasync|fsync), alternating
// SLICE_S-second slices between the files for SECS seconds, so drift in the device hits both alike.
// With DONTNEED=1 file A's pages are dropped from the page cache after its fsync (same disk layout,
// fresh page cache). Prints ops/s of each file and the ratio A/B.
// usage: folio_effect DIR SECS SLICE_S CHUNK_A_KIB CHUNK_B_KIB SYNC [DONTNEED]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (16L << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static int fill(const char *path, long chunk, const char *data, int dontneed) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) die("open");
  for (long at = 0; at < FILE_BYTES; at += chunk)
    if (pwrite(fd, data + at, chunk, at) != chunk) die("pwrite (fill)");
  if (fsync(fd)) die("fsync (fill)");
  if (dontneed && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) die("posix_fadvise");
  return fd;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: folio_effect DIR SECS SLICE_S CHUNK_A_KIB CHUNK_B_KIB fdatasync|fsync [DONTNEED]\n");
    return 2;
  }
  double secs = atof(argv[2]), slice = atof(argv[3]);
  long chunk_a = atol(argv[4]) << 10, chunk_b = atol(argv[5]) << 10;
  int use_fdatasync = strcmp(argv[6], "fdatasync") == 0;
  int dontneed = argc > 7 && atoi(argv[7]);
  char path_a[4096], path_b[4096];
  snprintf(path_a, sizeof path_a, "%s/.syncbench-folio-a-%d", argv[1], getpid());
  snprintf(path_b, sizeof path_b, "%s/.syncbench-folio-b-%d", argv[1], getpid());
  char *data = malloc(FILE_BYTES);
  if (!data) die("malloc");
  for (long i = 0; i < FILE_BYTES; i++) data[i] = (char)random();
  int fds[2] = {fill(path_a, chunk_a, data, dontneed), fill(path_b, chunk_b, data, 0)};
  char *buf;
  if (posix_memalign((void **)&buf, 4096, 8192)) die("posix_memalign");
  memcpy(buf, data + 8192, 8192);
  long ops[2] = {0, 0};
  double spent[2] = {0, 0};
  double end = now() + secs;
  for (int which = 0; now() < end; which ^= 1) {
    double start = now(), t;
    while ((t = now()) < start + slice) {
      if (pwrite(fds[which], buf, 8192, 0) != 8192) die("pwrite");
      if ((use_fdatasync ? fdatasync(fds[which]) : fsync(fds[which])) != 0) die("sync");
      ops[which]++;
    }
    spent[which] += t - start;
  }
  double a = ops[0] / spent[0], b = ops[1] / spent[1];
  printf("%ld %ld %s %d %.0f %.0f %.3f\n", chunk_a >> 10, chunk_b >> 10, argv[6], dontneed, a, b, a / b);
  unlink(path_a);
  unlink(path_b);
  return 0;
}

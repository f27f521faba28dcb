#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  const char *path = argc > 2 ? argv[2] : "/var/tmp/blk_loop.dat";
  int sleep_ms = argc > 3 ? atoi(argv[3]) : 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror("open"); return 1; }
  char buf[4096]; memset(buf, 'x', sizeof buf);
  if (pwrite(fd, buf, 4096, 0) != 4096 || fsync(fd)) { perror("init"); return 1; }
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) {
    if (pwrite(fd, buf, 4096, 0) != 4096) { perror("pwrite"); return 1; }
    if (fdatasync(fd)) { perror("fdatasync"); return 1; }
    if (sleep_ms) usleep(sleep_ms * 1000);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n;
  printf("%d iterations, %.1f us each\n", n, us);
  close(fd); unlink(path);
  return 0;
}

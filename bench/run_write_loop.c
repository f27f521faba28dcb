/* The minimal loop syncbench's `write` case is compared against (bench/run_overhead.sh):
 * 8 KiB pwrite()s advancing through a zero-filled 16 MiB file and wrapping, for SECS seconds.
 * Prints ops/s and the number of writes. Every result is checked, like syncbench does. Usage: run_write_loop FILE SECS */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WRITE_SIZE 8192
#define FILE_SIZE (16L << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FILE SECS\n", argv[0]); return 2; }
    double secs = atof(argv[2]);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) { perror("open"); return 1; }
    static char zeros[1 << 20], buf[WRITE_SIZE];
    for (long off = 0; off < FILE_SIZE; off += sizeof zeros)
        if (pwrite(fd, zeros, sizeof zeros, off) != sizeof zeros) { perror("prefill"); return 1; }
    if (fsync(fd) != 0) { perror("fsync"); return 1; }
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)(i * 131 + 7);
    long ops = 0, off = 0;
    double start = now_s(), end = start + secs, t = start;
    for (;;) {
        if (pwrite(fd, buf, WRITE_SIZE, off) != WRITE_SIZE) { perror("pwrite"); return 1; }
        ops++;
        off += WRITE_SIZE;
        if (off + WRITE_SIZE > FILE_SIZE) off = 0;
        /* Read the clock every 64 writes only: the loop must be as cheap as a loop can be. */
        if ((ops & 63) == 0 && (t = now_s()) >= end) break;
    }
    printf("%.1f %ld\n", ops / (t - start), ops);
    close(fd);
    unlink(argv[1]);
    return 0;
}

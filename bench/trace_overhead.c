/* Workloads for bench/trace_overhead.sh and bench/trace_attach_overhead.sh: prints the mean time per
 * iteration in ns, wall clock, then the CPU time this process used per iteration (user + system, which
 * includes what the kernel spends recording a traced call, and which other work on the machine does not
 * inflate the way it inflates the wall clock), then the time it waited runnable for a CPU per iteration
 * (`run_delay` of /proc/self/schedstat: from the wake-up after each fdatasync, or a preemption, to
 * running again) and its context switches per iteration (voluntary: it slept; involuntary: preempted).
 *   sync  DIR N   : N x (8 KiB pwrite + fdatasync) on one file (the traced calls)
 *   write DIR N   : N x 8 KiB pwrite, no sync (writes are traced unless --syncs-only)
 *   other DIR N   : N x (getppid + 8 KiB read from the page cache): calls the filter never stops
 *   sfr   DIR N   : N x sync_file_range(WRITE) of a clean range: a traced call that does no I/O, so the
 *                   difference traced - untraced is the tracer's own cost per timed call (two stops) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) { perror(what); exit(1); }

/* run_delay (ns waiting on a run queue) of this thread, the second field of /proc/thread-self/schedstat. */
static double run_delay_ns(void) {
    unsigned long long on_cpu, delay;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) die("/proc/thread-self/schedstat");
    if (fscanf(f, "%llu %llu", &on_cpu, &delay) != 2) die("schedstat");
    fclose(f);
    return (double)delay;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s sync|write|other|sfr DIR N\n", argv[0]); return 2; }
    const char *mode = argv[1];
    long n = atol(argv[3]);
    char path[4096], buf[8192];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/.syncbench-overhead-%d", argv[2], getpid());
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) die("open");
    /* pre-write 1 MiB so every iteration overwrites (no allocation, like a recycled WAL segment) */
    for (int i = 0; i < 128; i++) if (pwrite(fd, buf, 8192, i * 8192L) != 8192) die("prewrite");
    if (fsync(fd)) die("fsync");
    struct timespec t0, t1, c0, c1;
    struct rusage r0, r1;
    if (getrusage(RUSAGE_SELF, &r0)) die("getrusage");
    double d0 = run_delay_ns();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        off_t off = (i % 128) * 8192L;
        if (strcmp(mode, "sync") == 0) {
            if (pwrite(fd, buf, 8192, off) != 8192) die("pwrite");
            if (fdatasync(fd)) die("fdatasync");
        } else if (strcmp(mode, "write") == 0) {
            if (pwrite(fd, buf, 8192, off) != 8192) die("pwrite");
        } else if (strcmp(mode, "sfr") == 0) {
            if (sync_file_range(fd, off, 8192, SYNC_FILE_RANGE_WRITE)) die("sync_file_range");
        } else {
            getppid();
            if (pread(fd, buf, 8192, off) != 8192) die("pread");
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double d1 = run_delay_ns();
    if (getrusage(RUSAGE_SELF, &r1)) die("getrusage");
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
    printf("%s %.0f ns/iteration %.0f cpu-ns/iteration %.0f run-delay-ns/iteration %.3f voluntary-switches/iteration %.3f involuntary-switches/iteration\n",
           mode, ns / n, cpu / n, (d1 - d0) / n, (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n,
           (double)(r1.ru_nivcsw - r0.ru_nivcsw) / n);
    close(fd);
    unlink(path);
    return 0;
}

/* Prints "ready", waits for a line on stdin, then makes N (argv[2]) 4 KiB pwrite + fdatasync on the file
 * argv[1] (created), prints "done" and waits for stdin to close: the test reads the disk's counters
 * between "ready"/"done" and the go/close, inside the tracer's window. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int n = atoi(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    /* Allocated and durable before the loop: each iteration overwrites data only (a flush each). */
    if (pwrite(fd, buf, sizeof buf, 0) != sizeof buf || fsync(fd) != 0 || close(fd) != 0) { perror("setup"); return 1; }
    char line[16];
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 1;
    /* Opened while traced: the tracer names the descriptor at once. */
    fd = open(argv[1], O_WRONLY);
    if (fd < 0) { perror("open"); return 1; }
    for (int i = 0; i < n; i++) {
        if (pwrite(fd, buf, sizeof buf, 0) != sizeof buf) { perror("pwrite"); return 1; }
        if (fdatasync(fd) != 0) { perror("fdatasync"); return 1; }
    }
    printf("done\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {}
    return close(fd) != 0;
}

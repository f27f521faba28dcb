/* A known program for `syncbench trace --pid`: started first, attached to, then told to go.
 * Prints "ready", waits for a line on stdin (the test sends it once the tracer reports it is tracing),
 * then: the main thread makes 50 fsync on DIR/a, a second thread 30 fdatasync on DIR/b, and a child
 * process forked after the tracer attached makes 20 writes on DIR/c opened with O_DSYNC. Also a plain
 * write to a pipe (not a file: never reported). Prints "done" and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static void die(const char *what) { perror(what); exit(1); }

/* Close after a pause: `trace --pid` names a descriptor from /proc when the open's event reaches its reader,
 * and a descriptor closed before that is reported unnamed ("closed before it could be named"). The pause
 * keeps that race out of a test about counts and attribution on a loaded CI machine; a database keeps its
 * WAL and data files open far longer. */
static void close_later(int fd) {
    usleep(200 * 1000);
    if (close(fd)) die("close");
}

static int open_in(const char *name, int flags) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_WRONLY | flags, 0600);
    if (fd < 0) die("open");
    return fd;
}

static void *datasyncs(void *arg) {
    (void)arg;
    int fd = open_in("b", 0);
    for (int i = 0; i < 30; i++) {
        if (pwrite(fd, "bbbb", 4, i * 4) != 4) die("pwrite b");
        if (fdatasync(fd)) die("fdatasync");
    }
    close_later(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    dir = argv[1];
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) die("handshake");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        int fd = open_in("c", O_DSYNC);
        for (int i = 0; i < 20; i++) if (write(fd, "cccccccc", 8) != 8) die("write c");
        close_later(fd);
        _exit(0);
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, datasyncs, NULL)) die("pthread_create");
    int fd = open_in("a", 0);
    int pipes[2];
    if (pipe(pipes)) die("pipe");
    for (int i = 0; i < 50; i++) {
        if (write(fd, "aaaa", 4) != 4) die("write a");
        if (write(pipes[1], "p", 1) != 1) die("write pipe");
        if (fsync(fd)) die("fsync");
    }
    if (pthread_join(thread, NULL)) die("pthread_join");
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) die("child");
    printf("done\n");
    return 0;
}

/* A program whose main thread leaves first: for `syncbench trace --pid`. Prints "ready", waits for a line
 * on stdin (sent once the tracer reports it is tracing), starts a second thread and ends the main thread
 * with pthread_exit (the process lives on). The second thread waits until the main thread has exited
 * (its /proc state is Z), makes 40 fsync on DIR/a, prints "done" and exits the process with 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static void die(const char *what) { perror(what); exit(1); }

static int leader_exited(void) {
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *end = strrchr(stat, ')'); /* the state follows the name */
    return end && (end[2] == 'Z' || end[2] == 'X');
}

static void *worker(void *arg) {
    (void)arg;
    while (!leader_exited()) usleep(1000);
    char path[4096];
    snprintf(path, sizeof path, "%s/a", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) die("open");
    for (int i = 0; i < 40; i++) {
        if (write(fd, "x", 1) != 1) die("write");
        if (fsync(fd)) die("fsync");
    }
    printf("done\n");
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    dir = argv[1];
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) die("stdin");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) die("pthread_create");
    pthread_exit(NULL);
}

/* A program that makes every durability call syncbench trace intercepts a known number of times.
 * Used by tests/integration/trace.rs; the counts there must match the loops here. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static char buf[8192];

static void die(const char *what) { perror(what); exit(1); }

static int open_in_dir(const char *name, int flags) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, flags | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) die(name);
    return fd;
}

/* thread: 2 x (writev of 2 x 300 bytes + fsync) */
static void *thread_main(void *arg) {
    (void)arg;
    int fd = open_in_dir("thread", O_WRONLY);
    struct iovec iov[2] = {{buf, 300}, {buf, 300}};
    for (int i = 0; i < 2; i++) {
        if (writev(fd, iov, 2) != 600) die("writev");
        if (fsync(fd)) die("thread fsync");
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    dir = argc > 1 ? argv[1] : ".";
    memset(buf, 'x', sizeof buf);

    /* plain: 3 x (8 KiB write + fsync), 4 x (4 KiB pwrite + fdatasync), 1 sync_file_range, 1 syncfs,
       2 pwritev2(RWF_DSYNC), 1 pwritev2(RWF_SYNC) */
    int fd = open_in_dir("plain", O_WRONLY);
    for (int i = 0; i < 3; i++) {
        if (write(fd, buf, 8192) != 8192) die("write");
        if (fsync(fd)) die("fsync");
    }
    for (int i = 0; i < 4; i++) {
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        if (fdatasync(fd)) die("fdatasync");
    }
    if (sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE)) die("sync_file_range");
    if (syncfs(fd)) die("syncfs");
    struct iovec one = {buf, 512};
    for (int i = 0; i < 2; i++)
        if (pwritev2(fd, &one, 1, 0, RWF_DSYNC) != 512) die("pwritev2 RWF_DSYNC");
    if (pwritev2(fd, &one, 1, 0, RWF_SYNC) != 512) die("pwritev2 RWF_SYNC");
    close(fd);

    /* dsync: 5 x 1 KiB writes on an O_DSYNC descriptor; report whether the flag survived */
    fd = open_in_dir("dsync", O_WRONLY | O_DSYNC);
    printf("dsync_flag_kept=%d\n", (fcntl(fd, F_GETFL) & O_DSYNC) ? 1 : 0);
    for (int i = 0; i < 5; i++)
        if (write(fd, buf, 1024) != 1024) die("write O_DSYNC");
    close(fd);

    /* osync: 6 x 2 KiB writes on an O_SYNC descriptor, then 1 msync(MS_SYNC) and 1 msync(MS_ASYNC) */
    fd = open_in_dir("osync", O_RDWR | O_SYNC);
    for (int i = 0; i < 6; i++)
        if (write(fd, buf, 2048) != 2048) die("write O_SYNC");
    if (ftruncate(fd, 8192)) die("ftruncate");
    char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap");
    map[0] = 'y';
    if (msync(map, 8192, MS_SYNC)) die("msync MS_SYNC");
    if (msync(map, 8192, MS_ASYNC)) die("msync MS_ASYNC");
    close(fd);

    sync();

    pthread_t thread;
    if (pthread_create(&thread, NULL, thread_main, NULL)) die("pthread_create");
    if (pthread_join(thread, NULL)) die("pthread_join");

    /* child process: 7 x (100-byte write + fdatasync) */
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        int cfd = open_in_dir("child", O_WRONLY);
        for (int i = 0; i < 7; i++) {
            if (write(cfd, buf, 100) != 100) die("child write");
            if (fdatasync(cfd)) die("child fdatasync");
        }
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) die("waitpid");
    fflush(stdout);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

/* Counts heap allocations of a process for bench/bench pinned --mallocs (LD_PRELOAD; glibc only).
 * The counters live in a file mapped shared (MALLOC_COUNT_FILE, 4 KiB), so the harness reads them
 * at any moment without a signal, a thread or a system call in the measured process: it reads
 * them before and after a load and divides the difference by the requests served. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* [0] malloc, [1] calloc, [2] realloc, [3] aligned allocations. */
static _Atomic unsigned long fallback[4];
static _Atomic unsigned long *counters = fallback;

__attribute__((constructor)) static void map_counters(void) {
    const char *path = getenv("MALLOC_COUNT_FILE");
    if (!path) return;
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) return;
    if (ftruncate(fd, 4096) == 0) {
        void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page != MAP_FAILED) counters = page;
    }
    close(fd);
}

static inline void count(int which) { atomic_fetch_add_explicit(&counters[which], 1, memory_order_relaxed); }

void *malloc(size_t size) { count(0); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(1); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(2); return __libc_realloc(p, size); }
void *memalign(size_t alignment, size_t size) { count(3); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(3); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count(3);
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

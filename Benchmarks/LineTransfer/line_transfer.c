// What it costs to move a cache line from one core to another on this machine: the physical price of
// every write that one thread makes and another thread then reads or changes (a lock, a reference
// count, a job handed from the thread that made it to the one that runs it).
//
//   cc -O2 -pthread Benchmarks/LineTransfer/line_transfer.c -o /tmp/line_transfer && /tmp/line_transfer
//
// Two threads pinned to cores 0 and 1:
//   1. pass one flag back and forth: a round trip is two dependent transfers of one line;
//   2. the first thread writes LINES lines and passes the flag, the second writes them too and passes it
//      back: lines that move together, not one after another (the cost of a job's memory changing core).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { ROUNDS = 2000000, LINES = 12 };

static _Alignas(64) atomic_int flag;
static _Alignas(64) volatile char block[LINES * 64];

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void wait_for(int value) {
    while (atomic_load_explicit(&flag, memory_order_acquire) != value) {}
}

static void touch_block(void) {
    for (int line = 0; line < LINES; line++) block[line * 64]++;
}

static void *partner(void *touch) {
    pin(1);
    for (int i = 0; i < ROUNDS; i++) {
        wait_for(1);
        if (touch) touch_block();
        atomic_store_explicit(&flag, 0, memory_order_release);
    }
    return NULL;
}

static double run(int touch) {
    pthread_t thread;
    atomic_store(&flag, 0);
    pthread_create(&thread, NULL, partner, touch ? (void *)1 : NULL);
    double start = now();
    for (int i = 0; i < ROUNDS; i++) {
        if (touch) touch_block();
        atomic_store_explicit(&flag, 1, memory_order_release);
        wait_for(0);
    }
    double elapsed = now() - start;
    pthread_join(thread, NULL);
    return elapsed / ROUNDS;
}

int main(void) {
    pin(0);
    double flag_only = run(0);
    double with_block = run(1);
    printf("one line, there and back: %.1f ns (%.1f ns a transfer)\n", flag_only, flag_only / 2);
    printf("%d more lines written on each side: %.1f ns a round, %.1f ns a line each way beyond the flag\n",
           LINES, with_block, (with_block - flag_only) / (2 * LINES));
    return 0;
}

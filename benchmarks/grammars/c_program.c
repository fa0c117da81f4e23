#include <stdio.h>
#include "ring.h"

/* A fixed-size ring buffer of integers, with a running mean. */
struct ring {
    int data[16];
    int head;
    int count;
};

int ring_push(struct ring *r, int value) {
    if (r->count >= 16) {
        return -1;  // full
    }
    r->data[(r->head + r->count) % 16] = value;
    r->count++;
    return 0;
}

double ring_mean(const struct ring *r) {
    long sum = 0;
    for (int i = 0; i < r->count; i++) {
        sum += r->data[(r->head + i) % 16];
    }
    return r->count > 0 ? (double)sum / r->count : 0.0;
}

int main(void) {
    struct ring r = {{0}, 0, 0};
    unsigned int n = 0;
    while (n < 10 && ring_push(&r, n * n) == 0) {
        n += 1;
    }
    char *label = "mean";
    printf("%s: %f\n", label, ring_mean(&r));
    switch (r.count) {
    case 0:
        return 1;
    default:
        break;
    }
    return 0;
}

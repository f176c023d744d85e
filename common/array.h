/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling, and the bounds of a sorted one: the two shapes every
 * folder's tables share (the store's inode index, a view's grants, the scope registry, the
 * mount tables). Header-only, like util.h. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for need elements of size bytes in *v, which has room for *cap: doubled from *cap
 * (first when 0) until need fits. 0 (nothing done when need <= *cap), or -ENOMEM with *v and
 * *cap as they were. */
static inline int array_grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
        size_t ncap;
        void *nv;

        if (need <= *cap)
                return 0;
        ncap = *cap ? *cap : first;
        while (ncap < need) {
                if (ncap > SIZE_MAX / 2)
                        return -ENOMEM;
                ncap *= 2;
        }
        nv = reallocarray(*v, ncap, size);
        if (!nv)
                return -ENOMEM;
        *v = nv;
        *cap = ncap;
        return 0;
}

/* ARRAY_GROW(a, cap, need, first): array_grow for the array a (any element type) and its
 * capacity cap (a size_t lvalue). */
#define ARRAY_GROW(a, cap, need, first)                                                         \
        array_grow((void **)&(a), &(cap), (need), sizeof(*(a)), (first))

/* Index of the first of the n elements at base (size bytes each, in the order of cmp) that is
 * not below key (or, past_equal, above it), n when there is none; cmp(key, element) as
 * bsearch(3)'s. */
static inline size_t sorted_bound(const void *key, const void *base, size_t n, size_t size,
                                  int (*cmp)(const void *key, const void *element),
                                  bool past_equal)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = cmp(key, (const char *)base + mid * size);
                if (c > 0 || (past_equal && c == 0))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* The first element not below key: where key would go in front of its equals. */
static inline size_t lower_bound(const void *key, const void *base, size_t n, size_t size,
                                 int (*cmp)(const void *key, const void *element))
{
        return sorted_bound(key, base, n, size, cmp, false);
}

/* The first element above key: one past the last not above it (0 when every one is). */
static inline size_t upper_bound(const void *key, const void *base, size_t n, size_t size,
                                 int (*cmp)(const void *key, const void *element))
{
        return sorted_bound(key, base, n, size, cmp, true);
}

/* SPDX-License-Identifier: MIT */
/* Names of the values of an enum, as a table indexed by the value ({ [KIND_X] = "x" }): the
 * one lookup in both directions, so a name and its value cannot drift apart between two
 * copies of a table (as systemd's string tables). Header-only, like util.h. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* The name of value i in table (n names; a slot may be NULL), or NULL for a value out of the
 * table or unnamed. */
static inline const char *strtable_name(const char *const *table, size_t n, long i)
{
        return i >= 0 && (size_t)i < n ? table[i] : NULL;
}

/* The value that table (n names) names name by, exactly as spelled: its index, or -EINVAL
 * (NULL or no such name). */
static inline int strtable_index(const char *const *table, size_t n, const char *name)
{
        for (size_t i = 0; name && i < n; i++)
                if (table[i] && strcmp(table[i], name) == 0)
                        return (int)i;
        return -EINVAL;
}

/* The two for a table declared as an array (its size known where it is declared). */
#define STRTABLE_NAME(table, i) strtable_name((table), sizeof(table) / sizeof((table)[0]), (i))
#define STRTABLE_INDEX(table, name)                                                             \
        strtable_index((table), sizeof(table) / sizeof((table)[0]), (name))

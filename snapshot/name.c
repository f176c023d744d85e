/* SPDX-License-Identifier: MIT */
/* The staging NAME grammar. */
#include "snapshot/name.h"

#include <stddef.h>

bool snap_name_valid(const char *name)
{
        size_t n = 0;

        if (!name || name[0] == '.')
                return false;
        for (; name[n]; n++) {
                char ch = name[n];
                if (n == SNAP_NAME_MAX)
                        return false;
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
                        return false;
        }
        return n > 0;
}

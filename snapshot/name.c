/* SPDX-License-Identifier: MIT */
/* The staging NAME and entry name grammars. */
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

bool snap_entry_name_valid(const char *name)
{
        size_t n = 0;

        if (!snap_name_valid(name) || name[0] == '-')
                return false;
        while (name[n] && ((name[n] >= '0' && name[n] <= '9') ||
                           (name[n] >= 'a' && name[n] <= 'f') ||
                           (name[n] >= 'A' && name[n] <= 'F')))
                n++;
        return !(n == 64 && name[n] == '\0');
}

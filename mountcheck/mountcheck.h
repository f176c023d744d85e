/* SPDX-License-Identifier: MIT */
/* Everything a client of mountcheck needs: policy, check, verdict, descriptor identity. */
#pragma once

#include "mountcheck/check.h"
#include "mountcheck/identity.h"
#include "mountcheck/policy.h"
#include "mountcheck/verdict.h"

/* SPDX-License-Identifier: MIT */
/* Everything a client of mountcheck needs: policy, check, verdict, descriptor identity. */
#pragma once

#include "check.h"
#include "identity.h"
#include "policy.h"
#include "verdict.h"

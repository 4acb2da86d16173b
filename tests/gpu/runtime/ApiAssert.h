// Asserts that a lowbit C API call succeeded, printing its status and
// lowbit_last_error(); shared by the runtime's GPU tests.
#pragma once

#include "lowbit/lowbit.h"

#include <gtest/gtest.h>

#define LOWBIT_OK(call)                                                                            \
  do {                                                                                             \
    lowbit_status lowbitStatus = (call);                                                           \
    ASSERT_EQ(lowbitStatus, LOWBIT_STATUS_SUCCESS)                                                 \
        << #call << ": " << lowbit_status_string(lowbitStatus) << ": " << lowbit_last_error();     \
  } while (0)

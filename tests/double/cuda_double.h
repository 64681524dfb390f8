/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_double.h — the driver double's control API for kcache's own tests: the installed header
 * (tests/double/include/kcache/cuda_double.h, which needs no <cuda.h>) with <cuda.h> first, so that these tests
 * pass the driver's enumerators (CUDA_ERROR_*, CU_DEVICE_ATTRIBUTE_*) by name.
 */
#ifndef KCACHE_CUDA_DOUBLE_H
#define KCACHE_CUDA_DOUBLE_H

#include <cuda.h>

#include "kcache/cuda_double.h"

#endif

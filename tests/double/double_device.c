/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_device.c — what a device of the driver double says about itself: the attributes
 * cuDeviceGetAttribute answers for a device of a given compute capability.
 *
 * The one idea: the limits that decide whether a launch is legal (threads and block and grid
 * dimensions, shared memory per block with and without opt-in, registers) are the real
 * ones for each architecture, from the CUDA C Programming Guide's "Technical Specifications
 * per Compute Capability"; the rest (SM count, L2 size, clocks) are those of a typical part
 * of that architecture, plausible rather than exact.  A capability the table does not know
 * takes the newest one before it.  Tests change any value with kcd_set_attribute.
 *
 * Who calls it: cuda_double.c (devices_parse, kcd_set_attribute).  Must not: keep state.
 */
#include <string.h>

#include "double_internal.h"

/* Per-architecture facts (CUDA C Programming Guide, "Technical Specifications per Compute
 * Capability"): SMs of a typical part, opt-in shared memory per block, shared memory per SM,
 * threads and blocks per SM, L2 bytes, integrated. */
static const struct arch {
    int major, minor, sms, optin, smem_sm, threads_sm, blocks_sm, l2, integrated;
} ARCH[] = {
    {7, 0, 80, 96 << 10, 96 << 10, 2048, 32, 6 << 20, 0},       /* V100 */
    {7, 2, 8, 96 << 10, 96 << 10, 2048, 32, 512 << 10, 1},      /* Xavier */
    {7, 5, 40, 64 << 10, 64 << 10, 1024, 16, 4 << 20, 0},       /* T4 */
    {8, 0, 108, 163 << 10, 164 << 10, 2048, 32, 40 << 20, 0},   /* A100 */
    {8, 6, 72, 99 << 10, 100 << 10, 1536, 16, 6 << 20, 0},      /* A10 */
    {8, 7, 16, 163 << 10, 164 << 10, 1536, 16, 4 << 20, 1},     /* Orin */
    {8, 9, 58, 99 << 10, 100 << 10, 1536, 24, 48 << 20, 0},     /* L4 */
    {9, 0, 132, 227 << 10, 228 << 10, 2048, 32, 50 << 20, 0},   /* H100 SXM */
    {10, 0, 148, 227 << 10, 228 << 10, 2048, 32, 126 << 20, 0}, /* B200 */
    {10, 3, 148, 227 << 10, 228 << 10, 2048, 32, 126 << 20, 0}, /* B300 */
    {11, 0, 20, 227 << 10, 228 << 10, 1536, 24, 32 << 20, 1},   /* Thor */
    {12, 0, 170, 99 << 10, 100 << 10, 1536, 24, 96 << 20, 0},   /* RTX 5090 */
    {12, 1, 48, 99 << 10, 100 << 10, 1536, 24, 24 << 20, 1},    /* GB10 */
};

void kcd_dev_set(kcd_dev *d, CUdevice_attribute a, int v) { d->attr[a] = v, d->known[a] = 1; }

void kcd_dev_defaults(kcd_dev *d, int index, int major, int minor, int sms) {
    const struct arch *a = &ARCH[0];
    for (size_t i = 0; i < sizeof ARCH / sizeof ARCH[0]; i++)
        if (ARCH[i].major < major || (ARCH[i].major == major && ARCH[i].minor <= minor)) a = &ARCH[i];
    memset(d->known, 0, sizeof d->known);
    static const struct {
        CUdevice_attribute a;
        int v;
    } COMMON[] = {
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 << 10},
        {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 << 10},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1755000},
        {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
        {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
        {CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0},
        {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 0},
        {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
        {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
        {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0},
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
        {CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
        {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
        {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
        {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
        {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0},
        {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
        {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0},
        {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
        {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, 0},
        {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
        {CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 0},
        {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
    };
    for (size_t i = 0; i < sizeof COMMON / sizeof COMMON[0]; i++) kcd_dev_set(d, COMMON[i].a, COMMON[i].v);
    int ampere = major >= 8, hopper = major >= 9;
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms > 0 ? sms : a->sms);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, a->optin);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, a->smem_sm);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, a->threads_sm);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, a->blocks_sm);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, a->l2);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_INTEGRATED, a->integrated);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x18 + index);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, index);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, ampere ? 1024 : 0);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, ampere);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, ampere ? a->l2 / 4 * 3 : 0);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, ampere ? 134213632 : 0);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, hopper);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, hopper);
    kcd_dev_set(d, CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, hopper ? 4 : 1);
}

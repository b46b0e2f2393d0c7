// The C scenarios of tests/c_api/c_api_collectives_flow.c (the collectives of baton/baton.h), for
// c_api_test.cpp. Each returns 0; or the failing line of c_api_collectives_flow.c with the
// explanation written to `why`; or C_API_COLLECTIVES_SKIPPED with the reason in `why` when what
// it needs is absent here (no CUDA, no NCCL, fewer than two CUDA devices).
#pragma once

#include <baton/baton.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a flow returns when it could not run here; `why` says why. */
#define C_API_COLLECTIVES_SKIPPED (-1)

/* Element sizes and the names of element types and reductions. Runs everywhere. */
int c_api_collectives_flow_names(char* why, size_t capacity);
/* On the host backend: no collective library (reported, and BATON_ERROR_NOT_SUPPORTED from the
 * calls that make communicators), null and invalid handles. Runs everywhere. */
int c_api_collectives_flow_host(char* why, size_t capacity);
/* On two CUDA devices with NCCL (or the fake driver and its NCCL emulation): a group made by
 * baton_instance_create_communicators, a float32 sum all-reduce of 1024 elements (rank r
 * contributes r + 1: every rank reads 3) ordered by timeline semaphores, bad input on the
 * communicators, their queries, destroy. Skips without CUDA, NCCL or a second device. */
int c_api_collectives_flow_cuda(char* why, size_t capacity);

/* On one CUDA device with NCCL: a one-rank communicator made from an id
 * (baton_instance_create_communicator_id, baton_device_create_communicator), the float8 average
 * that NCCL 2.24 and later refuse with one rank refused when recorded, split with and without a
 * color, bad split and shrink arguments, destroy. Skips without CUDA or NCCL. */
int c_api_collectives_flow_cuda_single_rank(char* why, size_t capacity);

/* The BATON_*_INIT values of the collectives as C compiles them. */
baton_communicator_create_info c_api_default_communicator_create_info(void);
baton_communicator_group_create_info c_api_default_communicator_group_create_info(void);

#ifdef __cplusplus
}
#endif

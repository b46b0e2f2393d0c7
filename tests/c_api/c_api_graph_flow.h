// The graph command buffers of baton/baton.h driven from C (tests/c_api/c_api_graph_flow.c), for
// c_api_test.cpp. Returns 0, or the failing line of c_api_graph_flow.c with the explanation
// written to `why`.
#pragma once

#include <baton/baton.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* On every physical device of every backend that loads (the host always; CUDA and HIP where
 * their drivers load, as on the fake driver's registrations in tests/c_api/meson.build): a graph
 * command buffer (baton_device_create_command_buffer_with_info) records a fill, a copy, a host
 * call and a capturable native callback, ends, and is submitted twice; each submission's results
 * are checked, and that the native callback ran once, inside end, on a capture stream on CUDA and
 * HIP, and once per submission on the host backend (which replays graph command buffers). Also:
 * an uncapturable native callback or an unknown flag in a graph command buffer and an unknown
 * usage are BATON_ERROR_INVALID_ARGUMENT; a null create-info makes a replayed command buffer; a
 * GPU device without BATON_CAPABILITY_GRAPH_COMMAND_BUFFERS refuses graph usage. Writes to
 * *backends the BATON_BACKEND_BIT of each backend where a graph command buffer ran. */
int c_api_graph_flow_every_backend(uint32_t* backends, char* why, size_t capacity);

#ifdef __cplusplus
}
#endif

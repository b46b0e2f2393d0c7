// The C scenarios of tests/c_api/c_api_flow.c, for c_api_test.cpp. Each runs on the host backend
// and returns 0, or the failing line of c_api_flow.c with the explanation written to `why`.
#pragma once

#include <baton/baton.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int c_api_flow_enumerate(char* why, size_t capacity);
int c_api_flow_semaphores(char* why, size_t capacity);
int c_api_flow_shared_semaphores(char* why, size_t capacity);
int c_api_flow_submit(char* why, size_t capacity);
int c_api_flow_buffers(char* why, size_t capacity);
int c_api_flow_bad_input(char* why, size_t capacity);

// The BATON_*_INIT values as C compiles them.
baton_instance_create_info c_api_default_instance_create_info(void);
baton_semaphore_create_info c_api_default_semaphore_create_info(void);
baton_device_create_info c_api_default_device_create_info(void);
baton_buffer_create_info c_api_default_buffer_create_info(void);
baton_command_buffer_create_info c_api_default_command_buffer_create_info(void);

#ifdef __cplusplus
}
#endif

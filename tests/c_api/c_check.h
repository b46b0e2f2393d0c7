/* The checks the C flows (c_api_flow.c, c_api_vulkan_flow.c) share. A flow function returns 0 on
 * success, or the failing line with what went wrong written to `why` (of `capacity` bytes): the
 * macros expect those two names in scope. */
#ifndef BATON_TEST_C_CHECK_H
#define BATON_TEST_C_CHECK_H

#include <baton/baton.h>
#include <stdarg.h>
#include <stdio.h>

/* Writes "file:line: <message>" to why and returns line. */
static int fail_at(char* why, size_t capacity, const char* file, int line, const char* format,
                   ...) {
  va_list args;
  va_start(args, format);
  int n = snprintf(why, capacity, "%s:%d: ", file, line);
  if (n > 0 && (size_t)n < capacity) vsnprintf(why + n, capacity - (size_t)n, format, args);
  va_end(args);
  return line;
}

/* `call` must return `expected`. */
#define EXPECT_RESULT(expected, call)                                       \
  do {                                                                      \
    baton_result got_ = (call);                                             \
    if (got_ != (expected))                                                 \
      return fail_at(why, capacity, __FILE__, __LINE__,                     \
                     "%s returned %s, expected %s (last error: %s)", #call, \
                     baton_result_name(got_), baton_result_name(expected),  \
                     baton_last_error_message());                           \
  } while (0)
#define CHECK_OK(call) EXPECT_RESULT(BATON_SUCCESS, call)
#define REQUIRE(condition)                                                          \
  do {                                                                              \
    if (!(condition))                                                               \
      return fail_at(why, capacity, __FILE__, __LINE__, "%s is false", #condition); \
  } while (0)

#endif

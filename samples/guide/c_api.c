/* The guide's "The C API" and the README's C example (docs/guide.md, README.md): a timeline
 * semaphore signalled and waited for from C, and a failure read back. Compiled as C11, built and
 * run by meson test (suite guide); the region between the [name] lines is the code block of both
 * pages (tests/docs/check_examples.py). */
#include <baton/baton.h>
#include <stdio.h>
#include <string.h>

static int example(void) {
  /* [c-api] */
  baton_instance instance;
  baton_semaphore timeline = BATON_NULL_HANDLE;
  if (baton_create_instance(NULL, &instance) != BATON_SUCCESS) return 1;
  baton_semaphore_create_info info = BATON_SEMAPHORE_CREATE_INFO_INIT; /* the C++ defaults */
  info.debug_name = "frame";
  baton_result r = baton_instance_create_semaphore(instance, &info, &timeline);
  if (!baton_is_error(r)) r = baton_semaphore_signal(timeline, 1);
  if (!baton_is_error(r)) r = baton_semaphore_wait(timeline, 1, BATON_WAIT_FOREVER);
  if (baton_is_error(r)) printf("%s: %s\n", baton_result_name(r), baton_last_error_message());
  (void)baton_semaphore_destroy(timeline);
  (void)baton_instance_destroy(instance);
  /* [c-api] */
  return baton_is_error(r) ? 1 : 0;
}

static int failure(void) {
  baton_instance instance;
  baton_semaphore s = BATON_NULL_HANDLE;
  if (baton_create_instance(NULL, &instance) != BATON_SUCCESS) return 1;
  int failed = 0;
  if (baton_instance_create_semaphore(instance, NULL, &s) != BATON_SUCCESS) failed = 1;
  if (!failed && baton_semaphore_fail(s, "producer died") != BATON_SUCCESS) failed = 1;
  if (!failed && baton_semaphore_wait(s, 1, BATON_WAIT_FOREVER) != BATON_ERROR_SEMAPHORE_FAILED)
    failed = 1;
  if (!failed && strstr(baton_last_error_message(), "producer died") == NULL) failed = 1;
  (void)baton_semaphore_destroy(s);
  (void)baton_instance_destroy(instance);
  return failed;
}

int main(void) {
  if (example() != 0 || failure() != 0) {
    printf("FAILED: %s\n", baton_last_error_message());
    return 1;
  }
  printf("c_api: ok\n");
  return 0;
}

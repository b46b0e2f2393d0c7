#!/usr/bin/env python3
"""Drives libbaton's C API (baton/baton.h) from Python through ctypes, as a binding would.

Usage: ctypes_smoke.py PATH/TO/libbaton.so   (or BATON_LIBRARY=PATH ctypes_smoke.py)

Creates an instance (with a debug callback), the host backend's device and a queue, and a
semaphore; submits a batch that waits for 1 and signals 2 before anything signals 1 (a host call
in it records that it ran), signals 1 from the host, waits for 2, and checks the values; runs a
graph command buffer (replayed on the host backend) whose infallible host call fails: a warning,
and its signal reached; then checks that bad calls return the right result and message; checks the collectives' structs and
names, and that the host device makes no communicator. Exits non-zero on any mismatch.
"""
import ctypes as C
import os
import sys

# baton_result values (baton/baton.h).
SUCCESS, NOT_READY, TIMEOUT = 0, 1, 2
ERROR_INVALID_ARGUMENT, ERROR_INVALID_HANDLE = -1, -2
ERROR_NON_INCREASING_VALUE, ERROR_SEMAPHORE_FAILED = -4, -5
ERROR_NOT_SUPPORTED, ERROR_OBJECT_IN_USE = -10, -12
WAIT_FOREVER = 2**64 - 1
BACKEND_KIND_HOST = 0
MESSAGE_SEVERITY_WARNING, MESSAGE_SEVERITY_ERROR = 1, 2
COMMAND_BUFFER_USAGE_GRAPH = 1
HOST_CALL_INFALLIBLE = 1 << 0

# Handles are pointers to incomplete structs on 64-bit platforms: c_void_p.
Handle = C.c_void_p


class InstanceCreateInfo(C.Structure):
    _fields_ = [("debug_callback", C.c_void_p), ("debug_user_data", C.c_void_p),
                ("backend_mask", C.c_uint32), ("trace_path", C.c_char_p)]


class SemaphoreCreateInfo(C.Structure):
    _fields_ = [("initial_value", C.c_uint64), ("debug_name", C.c_char_p)]


class DeviceCreateInfo(C.Structure):
    _fields_ = [("queue_count", C.c_uint32), ("debug_name", C.c_char_p)]


class PhysicalDeviceProperties(C.Structure):
    _fields_ = [("backend", C.c_int32), ("ordinal", C.c_uint32), ("name", C.c_char * 256),
                ("uuid", C.c_uint8 * 16), ("arch", C.c_char * 64), ("compute_major", C.c_uint32),
                ("compute_minor", C.c_uint32), ("total_memory", C.c_uint64),
                ("max_queues", C.c_uint32), ("capabilities", C.c_uint64)]


class CommandBufferCreateInfo(C.Structure):
    _fields_ = [("usage", C.c_int32), ("debug_name", C.c_char_p)]


class SemaphoreValue(C.Structure):
    _fields_ = [("semaphore", Handle), ("value", C.c_uint64)]


class SubmitInfo(C.Structure):
    _fields_ = [("waits", C.POINTER(SemaphoreValue)), ("wait_count", C.c_size_t),
                ("command_buffers", C.POINTER(Handle)), ("command_buffer_count", C.c_size_t),
                ("signals", C.POINTER(SemaphoreValue)), ("signal_count", C.c_size_t)]


class CollectiveSupport(C.Structure):
    _fields_ = [("backend", C.c_int32), ("available", C.c_bool), ("version", C.c_uint32),
                ("library", C.c_char * 256), ("reason", C.c_char * 512),
                ("can_revoke", C.c_bool), ("can_shrink", C.c_bool), ("blocking_calls", C.c_bool)]


class CommunicatorCreateInfo(C.Structure):
    _fields_ = [("id", C.c_uint8 * 128), ("rank", C.c_uint32), ("rank_count", C.c_uint32),
                ("timeout_ns", C.c_uint64), ("debug_name", C.c_char_p)]


ELEMENT_TYPE_FLOAT32 = 7
REDUCE_OP_AVG = 4

DebugCallback = C.CFUNCTYPE(None, C.c_int32, C.c_char_p, C.c_void_p)
HostCallback = C.CFUNCTYPE(C.c_int32, C.c_void_p)

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("MISMATCH:", what)


def load(path):
    lib = C.CDLL(path)
    r = C.c_int32
    signatures = {
        "baton_result_name": (C.c_char_p, [r]),
        "baton_last_error_message": (C.c_char_p, []),
        "baton_create_instance": (r, [C.POINTER(InstanceCreateInfo), C.POINTER(Handle)]),
        "baton_instance_destroy": (r, [Handle]),
        "baton_instance_enumerate_physical_devices": (r, [Handle, C.POINTER(C.c_uint32),
                                                          C.POINTER(Handle)]),
        "baton_physical_device_get_properties": (r, [Handle,
                                                     C.POINTER(PhysicalDeviceProperties)]),
        "baton_instance_create_device": (r, [Handle, Handle, C.POINTER(DeviceCreateInfo),
                                             C.POINTER(Handle)]),
        "baton_instance_create_semaphore": (r, [Handle, C.POINTER(SemaphoreCreateInfo),
                                                C.POINTER(Handle)]),
        "baton_device_get_queue": (r, [Handle, C.c_uint32, C.POINTER(Handle)]),
        "baton_device_create_command_buffer": (r, [Handle, C.POINTER(Handle)]),
        "baton_device_destroy": (r, [Handle]),
        "baton_command_buffer_begin": (r, [Handle]),
        "baton_command_buffer_host_call": (r, [Handle, HostCallback, C.c_void_p]),
        "baton_device_create_command_buffer_with_info": (r, [Handle,
                                                             C.POINTER(CommandBufferCreateInfo),
                                                             C.POINTER(Handle)]),
        "baton_command_buffer_host_call_flags": (r, [Handle, HostCallback, C.c_void_p,
                                                     C.c_uint32]),
        "baton_command_buffer_end": (r, [Handle]),
        "baton_command_buffer_destroy": (r, [Handle]),
        "baton_queue_submit": (r, [Handle, C.POINTER(SubmitInfo), C.c_size_t]),
        "baton_queue_wait_idle": (r, [Handle, C.c_uint64]),
        "baton_semaphore_get_value": (r, [Handle, C.POINTER(C.c_uint64)]),
        "baton_semaphore_signal": (r, [Handle, C.c_uint64]),
        "baton_semaphore_wait": (r, [Handle, C.c_uint64, C.c_uint64]),
        "baton_semaphore_fail": (r, [Handle, C.c_char_p]),
        "baton_semaphore_destroy": (r, [Handle]),
        "baton_instance_get_collective_support": (r, [Handle, C.c_int32,
                                                      C.POINTER(CollectiveSupport)]),
        "baton_device_create_communicator": (r, [Handle, C.POINTER(CommunicatorCreateInfo),
                                                 C.POINTER(Handle)]),
        "baton_element_size": (C.c_uint64, [C.c_int32]),
        "baton_element_type_name": (C.c_char_p, [C.c_int32]),
        "baton_reduce_op_name": (C.c_char_p, [C.c_int32]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BATON_LIBRARY", "")
    if not path:
        print(__doc__, file=sys.stderr)
        return 2
    b = load(path)

    def expect(expected, result, call):
        check(result == expected,
              f"{call} returned {b.baton_result_name(result).decode()}, expected "
              f"{b.baton_result_name(expected).decode()}: {b.baton_last_error_message().decode()}")
        return result

    messages, warnings = [], []

    @DebugCallback
    def on_message(severity, message, _user_data):
        if severity == MESSAGE_SEVERITY_ERROR:
            messages.append(message.decode())
        elif severity == MESSAGE_SEVERITY_WARNING:
            warnings.append(message.decode())

    info = InstanceCreateInfo(C.cast(on_message, C.c_void_p), None, 1 << BACKEND_KIND_HOST)
    instance = Handle()
    expect(SUCCESS, b.baton_create_instance(C.byref(info), C.byref(instance)), "create_instance")
    check(instance.value is not None, "instance handle is null")

    count = C.c_uint32(1)
    physical = Handle()
    r = b.baton_instance_enumerate_physical_devices(instance, C.byref(count), C.byref(physical))
    check(r in (SUCCESS, NOT_READY) and count.value == 1, f"enumerate_physical_devices: {r}")
    properties = PhysicalDeviceProperties()
    expect(SUCCESS, b.baton_physical_device_get_properties(physical, C.byref(properties)),
           "get_properties")
    check(properties.backend == BACKEND_KIND_HOST, "the first physical device is not the host's")

    device = Handle()
    device_info = DeviceCreateInfo(1, b"ctypes")
    expect(SUCCESS, b.baton_instance_create_device(instance, physical, C.byref(device_info),
                                                   C.byref(device)), "create_device")
    queue = Handle()
    expect(SUCCESS, b.baton_device_get_queue(device, 0, C.byref(queue)), "get_queue")
    semaphore = Handle()
    semaphore_info = SemaphoreCreateInfo(0, b"smoke")
    expect(SUCCESS, b.baton_instance_create_semaphore(instance, C.byref(semaphore_info),
                                                      C.byref(semaphore)), "create_semaphore")

    ran = []

    @HostCallback
    def host_call(_user_data):
        ran.append(True)
        return SUCCESS

    commands = Handle()
    expect(SUCCESS, b.baton_device_create_command_buffer(device, C.byref(commands)),
           "create_command_buffer")
    expect(SUCCESS, b.baton_command_buffer_begin(commands), "begin")
    expect(SUCCESS, b.baton_command_buffer_host_call(commands, host_call, None), "host_call")
    expect(SUCCESS, b.baton_command_buffer_end(commands), "end")

    # Wait-before-signal: the batch waits for 1, which nothing has promised yet.
    wait = SemaphoreValue(semaphore, 1)
    signal = SemaphoreValue(semaphore, 2)
    command_list = (Handle * 1)(commands)
    submit = SubmitInfo(C.pointer(wait), 1, command_list, 1, C.pointer(signal), 1)
    expect(SUCCESS, b.baton_queue_submit(queue, C.byref(submit), 1), "submit")
    expect(TIMEOUT, b.baton_semaphore_wait(semaphore, 2, 1_000_000), "wait before the signal")
    check(not ran, "the host call ran before its wait was met")
    value = C.c_uint64(99)
    expect(SUCCESS, b.baton_semaphore_get_value(semaphore, C.byref(value)), "get_value")
    check(value.value == 0, f"value {value.value}, expected 0")

    expect(SUCCESS, b.baton_semaphore_signal(semaphore, 1), "signal 1")
    expect(SUCCESS, b.baton_semaphore_wait(semaphore, 2, WAIT_FOREVER), "wait for 2")
    expect(SUCCESS, b.baton_semaphore_get_value(semaphore, C.byref(value)), "get_value")
    check(value.value == 2, f"value {value.value}, expected 2")
    check(ran == [True], f"the host call ran {len(ran)} times, expected once")
    expect(SUCCESS, b.baton_queue_wait_idle(queue, WAIT_FOREVER), "queue_wait_idle")

    # A graph command buffer (the host backend accepts the usage and replays it) with an
    # infallible host call that fails: a warning at the debug callback, the signal still reached.
    graph_info = CommandBufferCreateInfo(COMMAND_BUFFER_USAGE_GRAPH, b"ctypes graph")
    graph = Handle()
    expect(SUCCESS, b.baton_device_create_command_buffer_with_info(device, C.byref(graph_info),
                                                                   C.byref(graph)),
           "create_command_buffer_with_info")
    failing = []

    @HostCallback
    def failing_call(_user_data):
        failing.append(True)
        return ERROR_NOT_SUPPORTED

    expect(SUCCESS, b.baton_command_buffer_begin(graph), "begin (graph)")
    expect(ERROR_INVALID_ARGUMENT,
           b.baton_command_buffer_host_call_flags(graph, failing_call, None, 1 << 7),
           "host_call_flags with an unknown flag")
    expect(SUCCESS, b.baton_command_buffer_host_call_flags(graph, failing_call, None,
                                                           HOST_CALL_INFALLIBLE),
           "host_call_flags")
    expect(SUCCESS, b.baton_command_buffer_end(graph), "end (graph)")
    graph_list = (Handle * 1)(graph)
    graph_signal = SemaphoreValue(semaphore, 3)
    graph_submit = SubmitInfo(None, 0, graph_list, 1, C.pointer(graph_signal), 1)
    expect(SUCCESS, b.baton_queue_submit(queue, C.byref(graph_submit), 1), "submit (graph)")
    expect(SUCCESS, b.baton_semaphore_wait(semaphore, 3, WAIT_FOREVER),
           "wait for an infallible host call's signal")
    check(failing == [True], f"the infallible host call ran {len(failing)} times, expected once")
    check(any("ErrorNotSupported" in w for w in warnings),
          f"no warning names the infallible call's error: {warnings!r}")
    expect(SUCCESS, b.baton_queue_wait_idle(queue, WAIT_FOREVER), "queue_wait_idle (graph)")
    expect(SUCCESS, b.baton_command_buffer_destroy(graph), "command_buffer_destroy (graph)")

    # Bad calls: the result, and a message naming the problem (also at the debug callback).
    expect(ERROR_NON_INCREASING_VALUE, b.baton_semaphore_signal(semaphore, 3), "signal 3 again")
    message = b.baton_last_error_message().decode()
    check("Semaphore::signal" in message and "not greater than" in message and "'smoke'" in message,
          f"message of the non-increasing signal: {message!r}")
    check(messages and messages[-1] == message,
          f"the debug callback got {messages[-1:]!r}, expected {message!r}")
    expect(ERROR_INVALID_HANDLE, b.baton_semaphore_signal(None, 3), "signal on a null handle")
    message = b.baton_last_error_message().decode()
    check(message.endswith("semaphore handle is null (ErrorInvalidHandle)"),
          f"message of the null handle: {message!r}")
    expect(ERROR_INVALID_ARGUMENT, b.baton_semaphore_get_value(semaphore, None), "null output")
    check(b.baton_result_name(ERROR_SEMAPHORE_FAILED) == b"ErrorSemaphoreFailed", "result name")

    expect(SUCCESS, b.baton_semaphore_fail(semaphore, b"smoke test failure"), "fail")
    expect(ERROR_SEMAPHORE_FAILED, b.baton_semaphore_wait(semaphore, 4, WAIT_FOREVER),
           "wait on a failed semaphore")
    check("smoke test failure" in b.baton_last_error_message().decode(),
          "the failure reason is not in the message")

    # Collectives: the host backend has none (a reason, not an error); its device makes no
    # communicator.
    support = CollectiveSupport()
    expect(SUCCESS, b.baton_instance_get_collective_support(instance, BACKEND_KIND_HOST,
                                                            C.byref(support)),
           "get_collective_support")
    check(support.backend == BACKEND_KIND_HOST and not support.available and support.reason,
          f"host collective support: available={support.available} reason={support.reason!r}")
    check(b.baton_element_type_name(ELEMENT_TYPE_FLOAT32) == b"float32", "element type name")
    check(b.baton_element_size(ELEMENT_TYPE_FLOAT32) == 4, "element size")
    check(b.baton_reduce_op_name(REDUCE_OP_AVG) == b"avg", "reduce op name")
    communicator_info = CommunicatorCreateInfo(rank=0, rank_count=1, debug_name=b"ctypes")
    communicator = Handle()
    expect(ERROR_NOT_SUPPORTED,
           b.baton_device_create_communicator(device, C.byref(communicator_info),
                                              C.byref(communicator)),
           "create_communicator on the host")

    expect(SUCCESS, b.baton_command_buffer_destroy(commands), "command_buffer_destroy")
    expect(SUCCESS, b.baton_semaphore_destroy(semaphore), "semaphore_destroy")
    expect(ERROR_INVALID_HANDLE, b.baton_semaphore_destroy(semaphore), "destroy twice")
    check("stale handle" in b.baton_last_error_message().decode(), "destroyed handle message")
    expect(SUCCESS, b.baton_device_destroy(device), "device_destroy")
    expect(SUCCESS, b.baton_instance_destroy(instance), "instance_destroy")

    if failures:
        print(f"{len(failures)} mismatch(es)")
        return 1
    print("ctypes smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

// baton/baton.hpp — includes the whole public API.
#pragma once

#include "baton/buffer.hpp"
#include "baton/command_buffer.hpp"
#include "baton/device.hpp"
#include "baton/fwd.hpp"
#include "baton/instance.hpp"
#include "baton/physical_device.hpp"
#include "baton/queue.hpp"
#include "baton/result.hpp"
#include "baton/semaphore.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

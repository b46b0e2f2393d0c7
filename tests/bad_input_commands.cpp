// Bad input, recording and submitting commands: copy, fill and update ranges outside their
// buffers (including offsets and sizes whose sum wraps around 2^64), overlapping copies, fill
// alignment, kMaxUpdateSize, null callbacks, recording outside begin()/end(), and submitting a
// command buffer without an ended recording. A rejected record leaves the recording usable; a
// rejected submit runs none of its batches. The fixture and EXPECT_REJECTED are in
// bad_input.hpp; the table these cases record for is docs/bad-input.md.
#include <cstdint>
#include <vector>

#include "bad_input.hpp"

namespace baton_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Command ranges and limits

TEST_F(BadInputTest, CopyRangesOutOfBounds) {
  auto src = makeBuffer(*deviceA_, 64);
  auto dst = makeBuffer(*deviceA_, 32);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-out-of-range",
                  rec->copyBuffer(*src, 48, *dst, 0, 32), Result::ErrorInvalidArgument, "source",
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.destination-out-of-range",
                  rec->copyBuffer(*src, 0, *dst, 16, 32), Result::ErrorInvalidArgument,
                  "destination", "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.zero-size", rec->copyBuffer(*src, 0, *dst, 0, 0),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-out-of-range",
                  rec->copyBuffer(*src, 65, *dst, 0, 1), Result::ErrorInvalidArgument, "outside");
  // Offsets and sizes whose sum wraps around 2^64 must not pass a naive bounds check.
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-range-wraps",
                  rec->copyBuffer(*src, UINT64_MAX - 7, *dst, 0, 16), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.size-wraps",
                  rec->copyBuffer(*src, 8, *dst, 0, UINT64_MAX), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.overlapping-ranges",
                  rec->copyBuffer(*src, 0, *src, 16, 32), Result::ErrorInvalidArgument, "overlap");
  EXPECT_OK(rec->copyBuffer(*src, 32, *dst, 0, 32));  // exactly in bounds
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, UpdateLimits) {
  auto big = makeBuffer(*deviceA_, 4 * baton::kMaxUpdateSize);
  auto rec = makeRecording(*deviceA_);
  std::vector<uint8_t> data(baton::kMaxUpdateSize + 1, 0x5A);
  EXPECT_REJECTED("commandBuffer.updateBuffer.too-large",
                  rec->updateBuffer(*big, 0, baton::kMaxUpdateSize + 1, data.data()),
                  Result::ErrorInvalidArgument, "kMaxUpdateSize");
  EXPECT_REJECTED("commandBuffer.updateBuffer.null-data", rec->updateBuffer(*big, 0, 16, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("commandBuffer.updateBuffer.zero-size",
                  rec->updateBuffer(*big, 0, 0, data.data()), Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.updateBuffer.out-of-range",
                  rec->updateBuffer(*big, 4 * baton::kMaxUpdateSize - 8, 16, data.data()),
                  Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->updateBuffer(*big, 0, baton::kMaxUpdateSize, data.data()));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, FillAlignmentAndRange) {
  auto buf = makeBuffer(*deviceA_, 64);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.fillBuffer.unaligned-offset", rec->fillBuffer(*buf, 2, 8, 0),
                  Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED("commandBuffer.fillBuffer.unaligned-size", rec->fillBuffer(*buf, 0, 6, 0),
                  Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED("commandBuffer.fillBuffer.zero-size", rec->fillBuffer(*buf, 0, 0, 0),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.fillBuffer.out-of-range", rec->fillBuffer(*buf, 60, 8, 0),
                  Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->fillBuffer(*buf, 60, 4, 0));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, NullCallbacks) {
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.hostCall.null-callback", rec->hostCall(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "callback", "null");
  EXPECT_REJECTED("commandBuffer.native.null-callback", rec->native(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "callback", "null");
  EXPECT_OK(rec->end());
}

// ---------------------------------------------------------------------------------------------
// Command buffer state

TEST_F(BadInputTest, SubmittingACommandBufferThatWasNotEnded) {
  auto out = makeSemaphore();
  const SemaphoreValue signal{*out, 1};
  baton::UniqueCommandBuffer neverBegun;
  ASSERT_OK(deviceA_->createCommandBuffer(neverBegun.put()));
  auto recording = makeRecording(*deviceA_);
  for (CommandBuffer cb : {*neverBegun, *recording}) {
    SubmitInfo infos[2];
    infos[0].signals = signal;  // valid on its own; must not run either
    infos[1].commandBuffers = cb;
    // queue.hpp lists ErrorInvalidState (a command buffer without an ended recording); either
    // code is accepted here, and docs/bad-input.md pins the one returned.
    const char* id = cb.raw() == neverBegun->raw() ? "queue.submit.command-buffer-never-begun"
                                                   : "queue.submit.command-buffer-still-recording";
    expectError(id, "submit(command buffer not ended)", [&] { return queueA_.submit(infos); },
                {Result::ErrorInvalidArgument, Result::ErrorInvalidState}, {"end"});
  }
  EXPECT_OK(queueA_.waitIdle(kLongNs));
  EXPECT_EQ(out->wait(1, 0), Result::Timeout) << "a rejected submit ran its valid batch";
  // A re-begun command buffer has no ended recording any more either.
  auto ended = makeEnded(*deviceA_);
  ASSERT_OK(ended->begin());
  const CommandBuffer handle = *ended;
  SubmitInfo info;
  info.commandBuffers = handle;
  expectError("queue.submit.command-buffer-re-begun", "submit(re-begun command buffer)",
              [&] { return queueA_.submit(info); },
              {Result::ErrorInvalidArgument, Result::ErrorInvalidState}, {"end"});
  EXPECT_OK(ended->end());
}

TEST_F(BadInputTest, RecordingOutsideBeginAndEnd) {
  auto buf = makeBuffer(*deviceA_, 64);
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
  uint32_t word = 0;
  EXPECT_REJECTED("commandBuffer.fillBuffer.not-recording", cb->fillBuffer(*buf, 0, 4, 0),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.updateBuffer.not-recording", cb->updateBuffer(*buf, 0, 4, &word),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.copyBuffer.not-recording", cb->copyBuffer(*buf, 0, *buf, 32, 4),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.hostCall.not-recording",
                  cb->hostCall([](void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(
      "commandBuffer.native.not-recording",
      cb->native([](const baton::NativeQueue&, void*) { return Result::Success; }, nullptr),
      Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.end.never-begun", cb->end(), Result::ErrorInvalidState,
                  "recording");
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->end());
  EXPECT_REJECTED("commandBuffer.end.twice", cb->end(), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.fillBuffer.not-recording", cb->fillBuffer(*buf, 0, 4, 0),
                  Result::ErrorInvalidState, "recording");
}

}  // namespace
}  // namespace baton_test

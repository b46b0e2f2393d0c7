// core::HeadVector (api/src/head_vector.hpp), which holds a semaphore's pending device signals and
// a completion thread's records in flight: elements leave from the front without the others
// moving, what a dropped element holds is released at once, and the storage stays bounded while
// elements come and go.
#include "head_vector.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace {

using baton::core::HeadVector;

// An element that counts the live objects it holds and the moves made of it.
struct Item {
  static int live;
  static int moves;
  int value = -1;
  std::shared_ptr<int> held;
  Item() = default;
  explicit Item(int v) : value(v), held(std::make_shared<int>(v)) { ++live; }
  Item(Item&& o) noexcept : value(o.value), held(std::move(o.held)) {
    ++moves;
    o.value = -1;
  }
  Item& operator=(Item&& o) noexcept {
    if (held) --live;
    value = o.value;
    held = std::move(o.held);
    o.value = -1;
    ++moves;
    return *this;
  }
  ~Item() {
    if (held) --live;
  }
};
int Item::live = 0;
int Item::moves = 0;

class HeadVectorTest : public ::testing::Test {
 protected:
  void SetUp() override { Item::live = Item::moves = 0; }
};

std::vector<int> values(const HeadVector<Item, 8>& v) {
  std::vector<int> out;
  for (const Item& x : v) out.push_back(x.value);
  return out;
}

TEST_F(HeadVectorTest, PopFrontReleasesWhatTheElementsHoldAndKeepsTheRestInOrder) {
  HeadVector<Item, 8> v;
  for (int i = 0; i < 5; ++i) v.push_back(Item(i));
  v.popFront(2);
  EXPECT_EQ(Item::live, 3) << "a dropped element's contents are released when it is dropped";
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v.front().value, 2);
  EXPECT_EQ(v[1].value, 3);
  EXPECT_EQ(v.back().value, 4);
  EXPECT_EQ(values(v), (std::vector<int>{2, 3, 4}));
  v.popFront(3);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(Item::live, 0);
}

TEST_F(HeadVectorTest, InsertAfterADroppedFrontKeepsOrder) {
  HeadVector<Item, 8> v;
  for (int i = 0; i < 6; i += 2) v.push_back(Item(i));  // 0 2 4
  v.popFront(1);                                        // 2 4
  v.insert(v.begin(), Item(1));
  v.insert(v.begin() + 2, Item(3));
  v.insert(v.end(), Item(5));
  EXPECT_EQ(values(v), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(Item::live, 5);
}

// Retiring one element at a time from a long list moves O(1) elements per retirement on average
// (an erase at the front moved all the others each time), and the storage stays bounded.
TEST_F(HeadVectorTest, RetiringFromTheFrontMovesAmortizedConstantElements) {
  HeadVector<Item, 8> v;
  const int kLive = 1000, kRounds = 20000;
  for (int i = 0; i < kLive; ++i) v.push_back(Item(i));
  Item::moves = 0;
  for (int i = kLive; i < kLive + kRounds; ++i) {
    v.push_back(Item(i));
    v.popFront(1);
    ASSERT_EQ(v.size(), static_cast<size_t>(kLive));
    ASSERT_EQ(v.front().value, i - kLive + 1);
  }
  EXPECT_EQ(Item::live, kLive);
  // Each push moves its element once (and a reallocation moves the rest, rarely); compactions
  // move each element at most once per kLive retired. An erase per retirement would move
  // kLive * kRounds = 2e7.
  EXPECT_LT(Item::moves, 6 * kRounds) << Item::moves << " moves";
}

TEST_F(HeadVectorTest, AppendSwapsStorageWhenNothingIsLive) {
  HeadVector<Item, 8> v;
  std::vector<Item> in;
  in.emplace_back(1);
  in.emplace_back(2);
  const Item* storage = in.data();
  v.append(in);
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(v.begin(), storage) << "taken without moving the elements";
  in.emplace_back(3);
  v.append(in);  // something is live: moved to the back
  EXPECT_EQ(values(v), (std::vector<int>{1, 2, 3}));
  v.popFront(3);
  EXPECT_EQ(Item::live, 0);
  v.clear();
  EXPECT_TRUE(v.empty());
}

}  // namespace

#include <ember/ember.h>
#include <gtest/gtest.h>

TEST(Smoke, AddTwoTensors) {
  auto a = ember::tensor({1.0, 2.0, 3.0});
  auto b = ember::tensor({2.0, 3.0, 4.0});
  auto c = a + b;
  EXPECT_EQ(c.dtype(), ember::kFloat);
  EXPECT_FLOAT_EQ(c[2].item<float>(), 7.0f);
}

// prof-bench's statistics on synthetic samples: Student t quantiles against
// published table values, the trimmed mean of known samples, confidence-interval
// coverage over many simulated measurements (fixed seed: deterministic), and
// the stopping rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "stats.h"

using prof::bench::should_stop;
using prof::bench::StopRule;
using prof::bench::student_t_quantile;
using prof::bench::summarize;

namespace {

// Normal deviates by Box-Muller from a fixed generator, so the samples are the
// same with every standard library.
class Normal {
 public:
  explicit Normal(uint64_t seed) : engine_(seed) {}
  double operator()(double mean, double sd) {
    const double u1 = (double(engine_() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = double(engine_() >> 11) / 9007199254740992.0;
    return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  double uniform(double low, double high) {
    return low + (high - low) * (double(engine_() >> 11) / 9007199254740992.0);
  }

 private:
  std::mt19937_64 engine_;
};

// Share of `trials` simulated measurements of `n` samples whose interval
// covers the true mean.
template <typename Draw>
double coverage(int trials, int n, double confidence, double true_mean, Draw draw) {
  int covered = 0;
  std::vector<double> samples(static_cast<size_t>(n));
  for (int t = 0; t < trials; ++t) {
    for (double& s : samples) s = draw();
    const auto summary = summarize(samples, confidence);
    if (summary.ci_low <= true_mean && true_mean <= summary.ci_high) ++covered;
  }
  return double(covered) / trials;
}

}  // namespace

TEST(StudentT, MatchesPublishedQuantiles) {
  EXPECT_NEAR(student_t_quantile(0.95, 1), 12.706, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 10), 2.228, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.90, 5), 2.015, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.99, 30), 2.750, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.99, 2), 9.925, 1e-3);
  // Large samples: the normal quantiles.
  EXPECT_NEAR(student_t_quantile(0.95, 1e6), 1.960, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.99, 1e6), 2.576, 1e-3);
}

TEST(Summary, TrimsAQuarterFromEachTailOfKnownSamples) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
  const auto s = summarize(samples, 0.95);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.kept, 50u);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.min, 26);
  EXPECT_DOUBLE_EQ(s.max, 75);
  EXPECT_LT(s.ci_low, 50.5);
  EXPECT_GT(s.ci_high, 50.5);
  EXPECT_NEAR(s.ci_high - s.mean, s.mean - s.ci_low, 1e-9);
  EXPECT_NEAR(s.rse, s.stderr_ / s.mean, 1e-12);
  EXPECT_NEAR(s.rel_err, (s.ci_high - s.mean) / s.mean, 1e-12);
}

TEST(Summary, OutliersDoNotMoveTheMean) {
  std::vector<double> samples(40, 7.5e-6);
  samples[3] = 1.0;    // a run hit by a context switch
  samples[17] = 1e-9;  // a clock glitch
  const auto s = summarize(samples, 0.95);
  EXPECT_DOUBLE_EQ(s.mean, 7.5e-6);
  EXPECT_DOUBLE_EQ(s.max, 7.5e-6);
  EXPECT_EQ(s.kept, 20u);
}

TEST(Summary, SmallSamples) {
  const auto three = summarize({1, 2, 3}, 0.95);  // floor(0.75) = 0 trimmed
  EXPECT_EQ(three.kept, 3u);
  EXPECT_DOUBLE_EQ(three.mean, 2);
  const auto one = summarize({4e-6}, 0.95);
  EXPECT_EQ(one.kept, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 4e-6);
  EXPECT_TRUE(std::isinf(one.stderr_));
  EXPECT_TRUE(std::isinf(one.rse));
  const auto none = summarize({}, 0.95);
  EXPECT_EQ(none.kept, 0u);
}

// The interval must cover the true mean as often as it claims: 2000 simulated
// measurements of 40 runs each.
TEST(Coverage, NormalRunsAt95) {
  Normal normal(20261124);
  const double cov = coverage(2000, 40, 0.95, 10e-6, [&] { return normal(10e-6, 2e-6); });
  EXPECT_GE(cov, 0.93);
  EXPECT_LE(cov, 0.97);
}

TEST(Coverage, NormalRunsAt90And99) {
  Normal normal(7);
  const double cov90 = coverage(2000, 24, 0.90, 5.0, [&] { return normal(5.0, 1.0); });
  EXPECT_GE(cov90, 0.875);
  EXPECT_LE(cov90, 0.925);
  const double cov99 = coverage(2000, 24, 0.99, 5.0, [&] { return normal(5.0, 1.0); });
  EXPECT_GE(cov99, 0.98);
  EXPECT_LE(cov99, 0.998);
}

TEST(Coverage, UniformRunsAt95) {
  Normal generator(99);
  const double cov = coverage(2000, 60, 0.95, 2.0, [&] { return generator.uniform(1.0, 3.0); });
  EXPECT_GE(cov, 0.93);
  EXPECT_LE(cov, 0.97);
}

// The standard error shrinks as 1/sqrt(n): four times the runs, half the error.
TEST(Summary, StandardErrorShrinksWithRuns) {
  Normal normal(3);
  auto mean_stderr = [&](int n) {
    double sum = 0;
    for (int t = 0; t < 300; ++t) {
      std::vector<double> samples(static_cast<size_t>(n));
      for (double& s : samples) s = normal(1.0, 0.1);
      sum += summarize(samples, 0.95).stderr_;
    }
    return sum / 300;
  };
  const double ratio = mean_stderr(40) / mean_stderr(160);
  EXPECT_NEAR(ratio, 2.0, 0.15);
}

TEST(StopRule, NeedsMinimumValidRunsThenSmallError) {
  const StopRule rule{10, 100, 0.05};
  std::vector<double> steady(9, 1e-5);
  EXPECT_FALSE(should_stop(rule, 9, steady, 0.95));  // below MIN valid runs
  steady.push_back(1e-5);
  EXPECT_TRUE(should_stop(rule, 10, steady, 0.95));  // rse 0 < 0.05
  // Noisy runs: relative error far above 5%.
  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 ? 1e-6 : 1e-4);
  EXPECT_FALSE(should_stop(rule, 20, noisy, 0.95));
  EXPECT_TRUE(should_stop(rule, 100, noisy, 0.95));  // the cap on runs
  EXPECT_FALSE(should_stop(rule, 99, {}, 0.95));
  EXPECT_TRUE(should_stop(rule, 100, {}, 0.95));
}

// Statistics of prof-bench (Kurnosov's MPIPerf method, section 4;
// docs/references.md): trimmed mean of the valid runs, its standard error, a
// Student-t confidence interval, and the stopping rule. No MPI here, so it is
// unit-tested on synthetic samples.
#pragma once

#include <cstddef>
#include <vector>

namespace prof::bench {

// Fraction trimmed from each tail of the valid runs (MPIPerf's g' = 25%).
inline constexpr double kTrimFraction = 0.25;

struct Summary {
  std::size_t count = 0;  // samples given
  std::size_t kept = 0;   // left after trimming both tails
  double mean = 0;        // trimmed mean
  double stderr_ = 0;     // standard error of the trimmed mean
  double min = 0;         // over the kept samples
  double max = 0;
  double ci_low = 0;
  double ci_high = 0;
  double rse = 0;         // relative standard error: stderr / mean (0 when the mean is 0)
  double rel_err = 0;     // MPIPerf's RelErr: the interval's half-width / mean
};

// Two-sided Student t quantile: the t with P(|T| <= t) = confidence for
// `degrees` degrees of freedom (computed, not tabulated; exact to ~1e-9).
double student_t_quantile(double confidence, double degrees);

// Distribution function of Student's t with `degrees` degrees of freedom.
double student_t_cdf(double t, double degrees);

// Trims floor(kTrimFraction * n) samples from each tail and summarizes the
// rest. The standard error is the trimmed mean's (Tukey-McLaughlin: the
// winsorized standard deviation over (1 - 2g) sqrt(n)), not the naive one of
// the kept samples, which would ignore the trimmed spread and give intervals
// far too narrow; the interval uses kept - 1 degrees of freedom (Yuen).
// With fewer than 2 kept samples the error and interval are infinite.
Summary summarize(std::vector<double> samples, double confidence);

// MPIPerf's stopping rule: enough valid runs and a small enough relative
// standard error, or the cap on runs reached.
struct StopRule {
  std::size_t min_valid = 10;
  std::size_t max_total = 200;
  double rse = 0.05;
};
bool should_stop(const StopRule& rule, std::size_t total, const std::vector<double>& valid,
                 double confidence);

}  // namespace prof::bench

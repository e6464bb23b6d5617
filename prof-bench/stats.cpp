// Statistics of prof-bench (see stats.h).
#include "stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace prof::bench {

namespace {

// Continued fraction of the regularized incomplete beta function I_x(a, b)
// (modified Lentz evaluation), valid for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    // Odd step.
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1.0) < kEps) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double degrees) {
  const double x = degrees / (degrees + t * t);
  const double tail = 0.5 * incomplete_beta(degrees / 2.0, 0.5, x);  // P(T > |t|)
  return t >= 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double confidence, double degrees) {
  const double target = 0.5 + confidence / 2.0;  // upper quantile
  // Bisection: the CDF is monotone and t below 1e6 covers df >= 1 at 0.99.
  double low = 0.0, high = 1.0;
  while (student_t_cdf(high, degrees) < target && high < 1e7) high *= 2.0;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    const double mid = 0.5 * (low + high);
    if (student_t_cdf(mid, degrees) < target) low = mid;
    else high = mid;
  }
  return 0.5 * (low + high);
}

Summary summarize(std::vector<double> samples, double confidence) {
  Summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const std::size_t cut = static_cast<std::size_t>(std::floor(kTrimFraction * double(n)));
  const std::size_t kept = n - 2 * cut;
  s.kept = kept;
  s.min = samples[cut];
  s.max = samples[n - cut - 1];
  double sum = 0;
  for (std::size_t i = cut; i < n - cut; ++i) sum += samples[i];
  s.mean = sum / double(kept);
  if (kept < 2) {
    s.stderr_ = s.ci_high = s.rse = s.rel_err = std::numeric_limits<double>::infinity();
    s.ci_low = -s.ci_high;
    return s;
  }
  // Winsorized variance: the trimmed samples replaced by the nearest kept one.
  double wsum = 0;
  for (std::size_t i = 0; i < n; ++i) wsum += std::clamp(samples[i], s.min, s.max);
  const double wmean = wsum / double(n);
  double wss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dev = std::clamp(samples[i], s.min, s.max) - wmean;
    wss += dev * dev;
  }
  const double wsd = std::sqrt(wss / double(n - 1));
  const double kept_share = double(kept) / double(n);  // 1 - 2g, exactly as trimmed
  s.stderr_ = wsd / (kept_share * std::sqrt(double(n)));
  const double half = student_t_quantile(confidence, double(kept - 1)) * s.stderr_;
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  s.rse = s.mean != 0 ? s.stderr_ / std::fabs(s.mean) : 0.0;
  s.rel_err = s.mean != 0 ? half / std::fabs(s.mean) : 0.0;
  return s;
}

bool should_stop(const StopRule& rule, std::size_t total, const std::vector<double>& valid,
                 double confidence) {
  if (total >= rule.max_total) return true;
  if (valid.size() < rule.min_valid) return false;
  return summarize(valid, confidence).rse < rule.rse;
}

}  // namespace prof::bench

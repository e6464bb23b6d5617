"""The statistics of the shim's paired benchmarks (run_shim_overhead.sh,
run_hop_pair.sh): one place for how a difference per round becomes a figure
and a verdict against the issue's 2 ns budget."""
import random
import statistics

med = statistics.median


def spread(d):
    """Median of the rounds' differences, their interquartile range, and a
    bootstrap 90% interval of the median (resampled rounds, fixed seed, so a
    run's figures can be reproduced from its rounds). Returns (text, interval);
    interval is None below 4 rounds, too few for a spread."""
    if len(d) < 4:
        return f"{med(d):+8.2f} ns  (too few rounds for a spread)", None
    q1, _, q3 = statistics.quantiles(d, n=4)
    rng = random.Random(1)
    boot = sorted(med(rng.choices(d, k=len(d))) for _ in range(2000))
    lo, hi = boot[100], boot[1899]
    return (f"{med(d):+8.2f} ns  IQR [{q1:+.2f}, {q3:+.2f}], "
            f"90% interval of the median [{lo:+.2f}, {hi:+.2f}]"), (lo, hi)


def verdict(interval, budget=2.0):
    """Within the budget when the whole 90% interval is under it, over when
    it is wholly above, undecided otherwise."""
    if interval is None:
        return "undecided (too few rounds)"
    lo, hi = interval
    if hi < budget:
        return f"within {budget:g} ns"
    if lo > budget:
        return f"more than {budget:g} ns"
    return f"undecided at {budget:g} ns (more rounds, or a quieter machine)"

#!/usr/bin/env python3
"""prof-bench under mpiexec at 2 ranks: one check per invocation (see CMakeLists.txt).

  csv_columns   the CSV header exactly as docs/interfaces.md, one row per (op, size), sane numbers
  bad_options   each bad option: non-zero exit, an error naming the option, no traceback-like noise
  delayed_rank  one rank delayed by D inside every run: prof-bench measures >= D, the barrier loop less (about D/2)
  late_rank     one rank starts one run late: that run is discarded and counted, not averaged in
  short_of_runs a row that reached MAX runs with fewer than MIN valid ones is named in a warning
  bcast_impls   --bcast native,shm (and PROF_BCAST=shm alone) give a row per implementation and size;
                a bad PROF_BCAST_TREE is named

delayed_rank needs runs that kept their slots; on a machine so loaded that fewer
than 10 of 300 did, it says so and exits 77 (skipped) rather than judge on no evidence.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

HEADER = ("op,impl,procs,bytes,runs_total,runs_valid,runs_kept,mean_s,stderr_s,min_s,max_s,"
          "ci_low_s,ci_high_s,rel_err,sync_error_s")

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, timeout=60, cwd=None):
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc


def mpirun(args, ranks, cmd, timeout=60):
    return run([args.mpiexec, "-n", str(ranks)] + cmd, timeout)


def bench_json(args, name, extra):
    path = os.path.join(args.out, name + ".json")
    proc = mpirun(args, 2, [args.bench, "--json", path] + extra)
    check(proc.returncode == 0, f"{name}: prof-bench exit status {proc.returncode}")
    with open(path) as f:
        return json.load(f)["results"]


def csv_columns(args):
    path = os.path.join(args.out, "bench.csv")
    # (An op or size given twice is one row: one per op, implementation and size.)
    proc = mpirun(args, 2, [args.bench, "--op", "bcast", "--op", "allreduce", "--op", "barrier", "--op", "bcast",
                            "--sizes", "8,4096,8", "--runs", "10:40", "--csv", path])
    check(proc.returncode == 0, f"exit status {proc.returncode}")
    with open(path) as f:
        lines = f.read().splitlines()
    check(lines[0] == HEADER, f"header is {lines[0]!r}")
    rows = list(csv.DictReader(lines))
    keys = [(r["op"], r["impl"], r["bytes"]) for r in rows]
    expected = [("bcast", "native", "8"), ("bcast", "native", "4096"),
                ("allreduce", "native", "8"), ("allreduce", "native", "4096"),
                ("barrier", "native", "0")]
    check(keys == expected, f"rows {keys}, expected {expected}")
    for r in rows:
        what = f"row {r['op']} {r['bytes']}"
        check(len(r) == 15 and None not in r, f"{what}: {len(r)} fields")
        total, valid, kept = int(r["runs_total"]), int(r["runs_valid"]), int(r["runs_kept"])
        check(r["procs"] == "2", f"{what}: procs {r['procs']}")
        # The stopping rule: MIN valid runs reached, or the cap of MAX runs.
        check(valid <= total <= 40 and (valid >= 10 or total == 40),
              f"{what}: runs total {total} valid {valid} (--runs 10:40)")
        check(kept == valid - 2 * (valid // 4), f"{what}: kept {kept} of {valid} valid (25% trimmed per tail)")
        v = {k: float(r[k]) for k in ("mean_s", "stderr_s", "min_s", "max_s", "ci_low_s", "ci_high_s",
                                      "rel_err", "sync_error_s")}
        check(math.isfinite(v["sync_error_s"]) and 0 <= v["sync_error_s"] < 0.01,
              f"{what}: sync_error_s {v['sync_error_s']}")
        if kept < 2:  # a machine so loaded that no run kept its slot: nothing to summarize
            check(kept == 0 or math.isinf(v["stderr_s"]), f"{what}: {v}")
            continue
        check(0 < v["min_s"] <= v["mean_s"] <= v["max_s"] < 1, f"{what}: min/mean/max {v}")
        check(v["ci_low_s"] <= v["mean_s"] <= v["ci_high_s"], f"{what}: interval {v}")
        check(v["stderr_s"] >= 0 and v["rel_err"] >= 0, f"{what}: errors {v}")
    check("mean_us" in proc.stdout and "bcast" in proc.stdout, "no table on the terminal")


def bad_options(args):
    cases = [
        (["--op", "scan"], "--op"),
        (["--sizes", "8,abc"], "--sizes"),
        (["--sizes", ""], "--sizes"),
        (["--root", "first"], "--root"),
        (["--confidence", "0.8"], "--confidence"),
        (["--rse", "0"], "--rse"),
        (["--runs", "50"], "--runs"),
        (["--runs", "50:10"], "--runs"),
        (["--bcast", "native,tcp"], "--bcast"),
        (["--bcast", "fast"], "--bcast"),
        (["--timer", "sundial"], "--timer"),
        (["--sync", "psychic"], "--sync"),
        (["--no-such-option"], "--no-such-option"),
        (["--csv", ""], "--csv"),
    ]
    for extra, option in cases:
        # Option errors are found before MPI starts: no mpiexec needed.
        proc = run([args.bench] + extra)
        check(proc.returncode != 0, f"{extra}: exit status 0")
        check(option in proc.stderr and "error" in proc.stderr.lower(),
              f"{extra}: stderr does not name {option}: {proc.stderr!r}")
    # One file named two ways, relative to a directory where it does not exist
    # yet (a file left there from an earlier run must not decide the check).
    with tempfile.TemporaryDirectory(dir=args.out) as fresh:
        extra = ["--csv", "same.out", "--json", "./same.out"]
        proc = run([args.bench] + extra, cwd=fresh)
        check(proc.returncode != 0, f"{extra}: exit status 0")
        check("--json" in proc.stderr, f"{extra}: stderr does not name --json: {proc.stderr!r}")
        check(not os.path.exists(os.path.join(fresh, "same.out")), f"{extra}: same.out written")
    # Found after MPI_Init (needs the number of ranks): one message, not one per rank.
    proc = mpirun(args, 2, [args.bench, "--root", "5", "--op", "bcast", "--sizes", "8"])
    check(proc.returncode != 0, "--root 5 at 2 ranks: exit status 0")
    check(proc.stderr.count("--root") == 1, f"--root 5: stderr {proc.stderr!r}")
    proc = mpirun(args, 2, [args.bench, "--op", "scan"])
    check(proc.returncode != 0 and proc.stderr.count("--op") == 1,
          f"--op scan under mpiexec: status {proc.returncode}, stderr {proc.stderr!r}")
    # A file that cannot be made, or whose writing fails (a full device): named, with why.
    for option, path, why in (("--json", os.path.join(args.out, "no-such-dir", "r.json"), "No such file or directory"),
                              ("--csv", "/dev/full", "No space left on device")):
        if not os.path.exists("/dev/full") and path == "/dev/full":
            continue
        proc = mpirun(args, 2, [args.bench, "--op", "barrier", "--runs", "2:2", "--quiet", option, path])
        check(proc.returncode != 0, f"{option} {path}: exit status 0")
        check(f"{option} '{path}'" in proc.stderr and why in proc.stderr,
              f"{option} {path}: stderr does not name the file and '{why}': {proc.stderr!r}")
    proc = run([args.bench, "--help"])
    check(proc.returncode == 0 and "--confidence" in proc.stdout, "--help")


SKIP = 77  # ctest SKIP_RETURN_CODE


def delayed_rank(args):
    delay = 0.004
    # Rank 1 spends `delay` inside every run of a small bcast from rank 0: the
    # collective is not complete until rank 1 has it, so its time is >= delay.
    results = bench_json(args, "delayed", ["--op", "bcast", "--sizes", "8", "--runs", "10:300",
                                           "--inject-delay", f"1:{delay}"])
    r = results[0]
    if r["runs_valid"] < 10:
        print(f"SKIP: the machine is too loaded: {r['runs_valid']} of {r['runs_total']} runs kept their slots")
        sys.exit(SKIP)
    mean = r["mean_s"]
    # Every run includes the delay; the typical one not much more.
    check(delay <= r["min_s"], f"prof-bench's fastest kept run {r['min_s']} s is below the {delay} s delay")
    check(delay <= mean < 1.5 * delay, f"prof-bench measured {mean} s with a {delay} s delay on rank 1")
    # The barrier loop averages per-rank times: the root's bcast returns at once,
    # so it reports about half the delay (more when the root is descheduled, as
    # on a loaded machine), always less than the whole delay prof-bench sees.
    proc = mpirun(args, 2, [args.barrier_loop, "--op", "bcast", "--sizes", "8", "--iters", "40",
                            "--inject-delay", f"1:{delay}"])
    check(proc.returncode == 0, f"barrier_loop exit status {proc.returncode}")
    row = list(csv.DictReader(proc.stdout.splitlines()))[0]
    loop_avg = float(row["avg_s"])
    check(loop_avg < delay, f"barrier loop reported {loop_avg} s: expected less than the {delay} s delay")
    print(f"delay {delay} s: prof-bench {mean} s, barrier loop {loop_avg} s")
    # Without the delay prof-bench measures microseconds: the delay is what it saw.
    plain = bench_json(args, "plain", ["--op", "bcast", "--sizes", "8", "--runs", "10:300"])
    if plain[0]["runs_valid"] > 0:
        check(plain[0]["mean_s"] < 0.25 * delay, f"undelayed bcast took {plain[0]['mean_s']} s")


def late_rank(args):
    late = 0.5
    # Rank 1 starts measured run 2 half a second past its slot: that run (and
    # any other it pushes late) is discarded and counted, never averaged in.
    results = bench_json(args, "late", ["--op", "bcast", "--sizes", "64", "--runs", "10:40",
                                        "--rse", "0.5", "--inject-late", f"1:2:{late}"])
    r = results[0]
    check(2 in r["late_runs"], f"late runs {r['late_runs']}: run 2 started late and is not among them")
    check(r["runs_late"] == len(r["late_runs"]) and r["runs_overrun"] == len(r["overrun_runs"]),
          f"counts {r['runs_late']}/{r['runs_overrun']} against lists {r['late_runs']}/{r['overrun_runs']}")
    check(r["runs_valid"] == r["runs_total"] - r["runs_late"] - r["runs_overrun"],
          f"valid {r['runs_valid']} != total {r['runs_total']} - late {r['runs_late']} - overrun {r['runs_overrun']}")
    check(r["runs_total"] >= 10, f"runs_total {r['runs_total']}")
    # A counted late run would add half a second to the maximum.
    if r["runs_valid"] > 0:
        check(r["max_s"] < late / 4, f"max_s {r['max_s']}: the late run was counted")


def short_of_runs(args):
    # At most two runs, the second started late by rank 1: the row stands on
    # one valid run (or none, if the first was late too), fewer than MIN.
    path = os.path.join(args.out, "short.json")
    proc = mpirun(args, 2, [args.bench, "--op", "bcast", "--op", "barrier", "--sizes", "64", "--runs", "2:2",
                            "--json", path, "--inject-late", "1:1:0.3"])
    check(proc.returncode == 0, f"exit status {proc.returncode}")
    results = json.load(open(path))["results"]
    check(len(results) == 2, f"{len(results)} rows, expected bcast and barrier")
    warned = [line for line in proc.stderr.splitlines() if "fewer than --runs MIN (2)" in line]
    for r in results:
        named = [line for line in warned if f" {r['op']} {r['impl']} {r['bytes']} B: {r['runs_valid']} valid runs of "
                 f"{r['runs_total']}," in line]
        # The warning says exactly when it holds (the barrier's runs may all be valid, or not).
        check(bool(named) == (r["runs_valid"] < 2), f"{r['op']}: {r['runs_valid']} valid of {r['runs_total']}, "
              f"warnings {warned}")
    check(results[0]["runs_valid"] < 2, f"bcast: {results[0]['runs_valid']} valid runs with run 1 late")


def bcast_impls(args):
    extra = ["--op", "bcast", "--sizes", "8,65536", "--runs", "10:40", "--rse", "0.5"]
    for name, env_shm, flags in [("both", False, ["--bcast", "native,shm"]), ("env", True, [])]:
        path = os.path.join(args.out, name + ".csv")
        env = dict(os.environ, PROF_BCAST="shm") if env_shm else None
        print("$", "PROF_BCAST=shm" if env_shm else "", args.bench, *extra, *flags, flush=True)
        proc = subprocess.run([args.mpiexec, "-n", "2", args.bench, "--csv", path] + extra + flags,
                              capture_output=True, text=True, timeout=60, env=env)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        check(proc.returncode == 0, f"{name}: exit status {proc.returncode}")
        with open(path) as f:
            rows = list(csv.DictReader(f))
        keys = [(r["impl"], r["bytes"]) for r in rows]
        expected = [("native", "8"), ("shm", "8"), ("native", "65536"), ("shm", "65536")]
        check(keys == expected, f"{name}: rows {keys}, expected {expected}")
        for r in rows:
            check(int(r["runs_total"]) >= 10, f"{name}: {r}")
    env = dict(os.environ, PROF_BCAST="shm", PROF_BCAST_TREE="binary")
    proc = subprocess.run([args.bench] + extra, capture_output=True, text=True, timeout=60, env=env)
    check(proc.returncode != 0 and "PROF_BCAST_TREE='binary'" in proc.stderr,
          f"bad PROF_BCAST_TREE: status {proc.returncode}, stderr {proc.stderr!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["csv_columns", "bad_options", "delayed_rank", "late_rank",
                                            "short_of_runs", "bcast_impls"])
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--barrier-loop", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    globals()[args.check](args)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

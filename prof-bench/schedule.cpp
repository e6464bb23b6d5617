// The launch schedule (see schedule.h).
#include "schedule.h"

#include <algorithm>
#include <cmath>

namespace prof::bench {

namespace {

// Layout of the stage's start message, broadcast by rank 0.
enum ControlField { kStart, kSlot, kStop, kRuns, kControlFields };

double max_over_ranks(double value, MPI_Comm comm) {
  MPI_Request request;
  double result = 0;
  MPI_Iallreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm, &request);
  polite_wait(&request);
  return result;
}

void broadcast_control(double* control, MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibcast(control, kControlFields, MPI_DOUBLE, 0, comm, &request);
  polite_wait(&request);
}

}  // namespace

Measurement measure(GlobalClock* clock, Collective* collective, MPI_Comm control,
                    const ScheduleSettings& settings) {
  int rank = 0, size = 1;
  MPI_Comm_rank(control, &rank);
  MPI_Comm_size(control, &size);
  Measurement m;

  const SyncSample sync_start = synchronize(clock, control, settings.sync);
  m.tsc_skew_start_s = tsc_residual_skew_ns(*clock, control) * 1e-9;

  // The first start of a stage comes a safe margin after rank 0 sends it:
  // 1.2 x the longest of a few broadcasts of the start message.
  double longest_bcast = 0;
  for (int i = 0; i < 8; ++i) {
    double message[kControlFields] = {};
    const double before = clock->now_ns();
    broadcast_control(message, control);
    longest_bcast = std::max(longest_bcast, clock->now_ns() - before);
  }
  double margin = 1.2 * max_over_ranks(longest_bcast, control);

  unsigned run_counter = 0;  // warm-up and measured runs: picks the rotating root
  auto next_root = [&] { return settings.rotate_root ? int(run_counter % unsigned(size)) : settings.root; };
  auto delay_if_asked = [&] {
    if (rank == settings.delay_rank) wait_until(*clock, clock->now_ns() + settings.delay_s * 1e9);
  };

  // Warm-up (MPIPerf's stage 0): one call that pays the operation's
  // first-call costs (connections, buffers), then k' runs back to back from
  // one start, which give the first slot length. None is counted.
  {
    const int root = next_root();
    collective->run(root);
    collective->rewrite(root, run_counter++);
  }
  double message[kControlFields] = {};
  if (rank == 0) message[kStart] = clock->now_ns() + margin;
  broadcast_control(message, control);
  wait_until(*clock, message[kStart]);
  for (int i = 0; i < kWarmupRuns; ++i) {
    const int root = next_root();
    delay_if_asked();
    collective->run(root);
    collective->rewrite(root, run_counter++);
  }
  double slot = 1.1 * max_over_ranks(clock->now_ns() - message[kStart], control) / kWarmupRuns;
  m.first_slot_s = slot * 1e-9;

  long measured = 0;  // measured runs so far, the same on every rank
  std::vector<double> outcome;
  for (;;) {
    if (rank == 0) {
      const bool stop = should_stop(settings.stop, m.runs_total, m.valid_s, settings.confidence);
      const std::size_t left = settings.stop.max_total - std::min(settings.stop.max_total, m.runs_total);
      message[kStart] = clock->now_ns() + margin;
      message[kSlot] = slot;
      message[kStop] = stop ? 1 : 0;
      message[kRuns] = double(std::min<std::size_t>(kRunsPerStage, left));
    }
    broadcast_control(message, control);
    if (message[kStop] != 0) break;
    const double stage_start = message[kStart];
    const double stage_slot = message[kSlot];
    const int runs = int(message[kRuns]);
    // Per run: whether this rank started late, its end minus the slot's
    // start, and its end minus its own start.
    outcome.assign(3 * size_t(runs), 0.0);
    for (int i = 0; i < runs; ++i) {
      const double slot_start = stage_start + i * stage_slot;
      const int root = next_root();
      if (rank == settings.late_rank && measured + i == settings.late_run)
        wait_until(*clock, slot_start + settings.late_s * 1e9);
      const double lateness = wait_until(*clock, slot_start);
      delay_if_asked();
      collective->run(root);
      const double end = clock->now_ns() - slot_start;
      outcome[i] = lateness <= kLateToleranceNs ? 0.0 : 1.0;
      outcome[runs + i] = end;
      outcome[2 * runs + i] = end - lateness;
      collective->rewrite(root, run_counter++);
    }
    measured += runs;
    std::vector<double> worst(outcome.size());
    MPI_Request request;
    MPI_Ireduce(outcome.data(), worst.data(), int(outcome.size()), MPI_DOUBLE, MPI_MAX, 0,
                control, &request);
    polite_wait(&request);
    if (rank != 0) continue;

    const std::vector<double> late(worst.begin(), worst.begin() + runs);
    const std::vector<double> ends(worst.begin() + runs, worst.begin() + 2 * runs);
    const std::vector<double> calls(worst.begin() + 2 * runs, worst.end());
    const StageVerdict verdict = judge_stage(late, ends, calls, stage_slot, measured - runs);
    m.runs_total += std::size_t(runs);
    m.runs_late += verdict.late_runs.size();
    m.runs_overrun += verdict.overrun_runs.size();
    m.late_runs.insert(m.late_runs.end(), verdict.late_runs.begin(), verdict.late_runs.end());
    m.overrun_runs.insert(m.overrun_runs.end(), verdict.overrun_runs.begin(), verdict.overrun_runs.end());
    for (double ns : verdict.valid_ns) m.valid_s.push_back(ns * 1e-9);
    slot = verdict.next_slot_ns;
    // A late first run means the start message came too close to the start.
    if (late[0] != 0) margin = std::min(2 * margin, std::max(margin, 10e6));
    if (settings.progress)
      settings.progress(m.runs_total, m.valid_s.size(), settings.stop.max_total, settings.progress_ctx);
  }
  m.slot_s = slot * 1e-9;
  m.margin_s = margin * 1e-9;

  const SyncSample sync_end = synchronize(clock, control, settings.sync);
  m.tsc_skew_end_s = tsc_residual_skew_ns(*clock, control) * 1e-9;
  m.sync_error_s = max_over_ranks(sync_error_bound_ns(sync_start, sync_end), control) * 1e-9;
  m.drift_s = max_over_ranks(std::fabs(sync_end.offset_ns - sync_start.offset_ns), control) * 1e-9;
  return m;
}

}  // namespace prof::bench

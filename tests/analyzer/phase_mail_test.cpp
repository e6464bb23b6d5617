// The mailboxes between workers (phase_mail.h): every box a process can use
// is its own, a process holds boxes only where one of its workers is at an
// end, and records reach the box they were written to, and only it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "phase_mail.h"

namespace prof::analysis::detail {
namespace {

constexpr int kParities[] = {0, 1};

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Every (parity, source, destination) with a local end, for each family:
// distinct boxes, none overlapping another.
void expect_distinct_boxes(PhaseMail& mail, unsigned workers, unsigned lo, unsigned hi) {
  std::map<uintptr_t, std::tuple<int, unsigned, unsigned>> coll, result, bare;
  auto local = [&](unsigned w) { return w >= lo && w < hi; };
  for (unsigned s = 0; s < workers; ++s)
    for (unsigned d = 0; d < workers; ++d) {
      if (!local(s) && !local(d)) continue;
      for (int p : kParities) {
        EXPECT_TRUE(coll.emplace(address(&mail.coll_box(p, s, d)), std::tuple{p, s, d}).second)
            << "collective box " << p << " " << s << " " << d;
        EXPECT_TRUE(bare.emplace(address(&mail.bare_send_box(p, s, d)), std::tuple{p, s, d}).second)
            << "send box " << p << " " << s << " " << d;
      }
      for (int p : {0, 1, PhaseMail::kEarlyResults})
        EXPECT_TRUE(result.emplace(address(&mail.result_box(p, s, d)), std::tuple{p, s, d}).second)
            << "result box " << p << " " << s << " " << d;
    }
  // (Boxes of one family lie apart by at least a box.)
  auto apart = [](const auto& boxes, size_t bytes) {
    for (auto it = boxes.begin(); std::next(it) != boxes.end(); ++it)
      EXPECT_GE(std::next(it)->first - it->first, bytes);
  };
  apart(coll, PhaseMail::kBoxBytes<CollRec>);
  apart(result, PhaseMail::kBoxBytes<ResultRec>);
  apart(bare, PhaseMail::kBoxBytes<BareSendRec>);
}

TEST(PhaseMail, EveryBoxOfAPlainCommandIsItsOwn) {
  PhaseMail mail;
  mail.resize(5, 0, 5);
  expect_distinct_boxes(mail, 5, 0, 5);
}

TEST(PhaseMail, AJobProcessHasABoxForEachPairWithALocalEnd) {
  PhaseMail mail;
  mail.resize(12, 4, 8);
  expect_distinct_boxes(mail, 12, 4, 8);
  // Two other processes' workers exchange through their own processes.
  EXPECT_THROW(mail.coll_box(0, 1, 9), std::logic_error);
  EXPECT_THROW(mail.result_box(PhaseMail::kEarlyResults, 10, 2), std::logic_error);
}

// A process holds its workers' boxes times the job's, not the job's
// squared: the collective boxes of 64 workers, 8 of them local, two
// parities each way, span at most 4 x 8 x 64 boxes and a guard a source,
// where every pair's would be 2 x 64 x 64.
TEST(PhaseMail, AProcessHoldsItsWorkersTimesTheJobs) {
  constexpr unsigned kWorkers = 64, kLo = 24, kHi = 32;
  PhaseMail mail;
  mail.resize(kWorkers, kLo, kHi);
  uintptr_t least = UINTPTR_MAX, most = 0;
  for (unsigned s = 0; s < kWorkers; ++s)
    for (unsigned d = kLo; d < kHi; ++d)
      for (int p : kParities)
        for (const auto& [from, to] : {std::pair{s, d}, std::pair{d, s}}) {
          const uintptr_t a = address(&mail.coll_box(p, from, to));
          least = std::min(least, a);
          most = std::max(most, a);
        }
  const size_t boxes = (most - least) / PhaseMail::kBoxBytes<CollRec> + 1;
  constexpr size_t kGuardBoxes = (512 + PhaseMail::kBoxBytes<CollRec> - 1) / PhaseMail::kBoxBytes<CollRec>;
  EXPECT_LE(boxes, 4u * (kHi - kLo) * kWorkers + kGuardBoxes * kWorkers);
  EXPECT_GE(boxes, 2u * (kHi - kLo) * kWorkers);
}

// A source's boxes end in a guard no one writes: the last box of one local
// source and the first of the next lie at least 512 bytes apart beyond the
// box itself.
TEST(PhaseMail, EachSourcesBoxesEndInAGuard) {
  PhaseMail mail;
  mail.resize(3, 0, 3);
  for (unsigned s = 0; s + 1 < 3; ++s) {
    const uintptr_t last = address(&mail.coll_box(1, s, 2));
    const uintptr_t next = address(&mail.coll_box(0, s + 1, 0));
    EXPECT_GE(next - last, PhaseMail::kBoxBytes<CollRec> + 512) << "source " << s;
  }
}

// Records go to the box they were written to: read back from it in order
// after publish(), every other box empty; more than the first capacity
// (the box grows) and across the staging.
TEST(PhaseMail, RecordsReachTheirBoxOnly) {
  PhaseMail mail;
  mail.resize(6, 2, 4);
  constexpr int kRecords = 1000;
  for (int i = 0; i < kRecords; ++i)
    mail.coll_box(1, 3, 5).emplace_with([&](CollRec& c) {
      c = CollRec{};
      c.seq = static_cast<uint64_t>(i);
      c.rank = i % 7;
    });
  mail.publish(1, 3);
  auto& box = mail.coll_box(1, 3, 5);
  ASSERT_EQ(box.size(), static_cast<size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) {
    EXPECT_EQ(box.begin()[i].seq, static_cast<uint64_t>(i));
    EXPECT_EQ(box.begin()[i].rank, i % 7);
  }
  for (unsigned s = 0; s < 6; ++s)
    for (unsigned d = 0; d < 6; ++d)
      for (int p : kParities)
        if ((s >= 2 && s < 4) || (d >= 2 && d < 4)) {
          EXPECT_EQ(mail.coll_box(p, s, d).size(), (p == 1 && s == 3 && d == 5) ? size_t{kRecords} : 0u)
              << p << " " << s << " " << d;
        }
}

// A reader's loop (Mailbox::for_each, which asks for the lines ahead of it)
// visits each published record once, in order, and none in an empty box.
TEST(PhaseMail, ForEachReadsEachPublishedRecordOnceInOrder) {
  Mailbox<CollRec> box;
  int calls = 0;
  box.for_each([&](const CollRec&) { ++calls; });
  EXPECT_EQ(calls, 0);
  constexpr int kRecords = 1003;  // several growths and a partial staging
  for (int i = 0; i < kRecords; ++i)
    box.emplace_with([&](CollRec& c) {
      c = CollRec{};
      c.seq = static_cast<uint64_t>(i);
    });
  box.publish();
  std::vector<uint64_t> read;
  box.for_each([&](const CollRec& c) { read.push_back(c.seq); });
  ASSERT_EQ(read.size(), static_cast<size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(read[static_cast<size_t>(i)], static_cast<uint64_t>(i));
}

// Publishing, packing and reading visit the pairs written in the phase only:
// a destination learns its sources, in increasing order, each once
// whatever it was sent and in whatever order; the process's boxes count as
// empty at the phase's end only when nothing was written in it.
TEST(PhaseMail, ADestinationReadsTheSourcesThatWroteToIt) {
  PhaseMail mail;
  mail.resize(8, 0, 8);
  EXPECT_TRUE(mail.empty(0));
  for (unsigned s : {6u, 1u, 4u}) mail.start_phase(0, s);
  // Two families and many records from 6, one from 1 and 4; 4 to 2 as well.
  for (int i = 0; i < 20; ++i) mail.late_box(0, 6, 3).push_back(LateRecvRec{});
  mail.result_box(0, 6, 3).push_back(ResultRec{});
  mail.send_row(0, 1)[3].push_back(SendRec{});
  mail.coll_box(0, 4, 3).push_back(CollRec{});
  mail.coll_box(0, 4, 2).push_back(CollRec{});
  EXPECT_FALSE(mail.empty(0));
  EXPECT_TRUE(mail.empty(1));
  for (unsigned s : {6u, 1u, 4u}) mail.publish(0, s);
  EXPECT_EQ(mail.late_box(0, 6, 3).size(), 20u);  // published
  EXPECT_EQ(mail.send_box(0, 1, 3).size(), 1u);
  std::vector<unsigned> sources;
  mail.take_sources(0, 3, sources);
  EXPECT_EQ(sources, (std::vector<unsigned>{1, 4, 6}));
  mail.take_sources(0, 3, sources);  // taken once
  EXPECT_TRUE(sources.empty());
  mail.take_sources(0, 2, sources);
  EXPECT_EQ(sources, (std::vector<unsigned>{4}));
  mail.take_sources(1, 3, sources);  // the other parity: none
  EXPECT_TRUE(sources.empty());
  // The sources' next phase of this parity starts afresh.
  for (unsigned s : {6u, 1u, 4u}) mail.start_phase(0, s);
  EXPECT_TRUE(mail.empty(0));
  mail.coll_box(0, 4, 3).push_back(CollRec{});
  mail.take_sources(0, 3, sources);
  EXPECT_EQ(sources, (std::vector<unsigned>{4}));
}

// A box no one writes costs a cache line: a process holds a box for each
// pair of its workers and the job's in each family and parity, most never
// used (1.4 GB a process at 3,200 workers with 8 records staged in place).
TEST(PhaseMail, AnUnusedBoxIsOneCacheLine) {
  EXPECT_EQ(PhaseMail::kBoxBytes<SendRec>, 64u);
  EXPECT_EQ(PhaseMail::kBoxBytes<BareSendRec>, 64u);
  EXPECT_EQ(PhaseMail::kBoxBytes<LateRecvRec>, 64u);
  EXPECT_EQ(PhaseMail::kBoxBytes<CollRec>, 64u);
  EXPECT_EQ(PhaseMail::kBoxBytes<ResultRec>, 64u);
}

// A box emptied into a stream and freed (a box to another process) takes
// records again, staged and published as before.
TEST(PhaseMail, AReleasedBoxTakesRecordsAgain) {
  Mailbox<BareSendRec> box;
  for (int round = 0; round < 3; ++round) {
    const int records = 5 + 13 * round;  // a partial staging, then several
    for (int i = 0; i < records; ++i) box.push_back(BareSendRec{ChannelKey{}, 1.0 * i + round});
    box.publish();
    ASSERT_EQ(box.size(), static_cast<size_t>(records));
    for (int i = 0; i < records; ++i) EXPECT_EQ(box.begin()[i].enter, 1.0 * i + round);
    box.release();
    EXPECT_TRUE(box.empty());
  }
}

}  // namespace
}  // namespace prof::analysis::detail

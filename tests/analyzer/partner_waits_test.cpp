// PartnerWaits (analyzer/src/engine.h): one rank's waits in one node by
// partner. Checked against a std::map of the same sums, through merges of
// its arrival-order tail into the sorted prefix, with and without uncertain
// waits; against itself fed the same waits in the reverse order (the sums are
// exact: the waits come in an order the workers decide); and for the memory
// it keeps a partner.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "engine.h"

namespace prof::analysis::detail {
namespace {

struct Sums {
  Instant length = 0, uncertain = 0;
};

void expect_same(const PartnerWaits& got, const std::map<int32_t, Sums>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::map<int32_t, Sums> seen;
  got.for_each([&](const PartnerWaitAcc& p) {
    EXPECT_TRUE(seen.emplace(p.partner, Sums{p.length, p.uncertain}).second) << "partner twice: " << p.partner;
  });
  for (const auto& [partner, s] : want) {
    const auto it = seen.find(partner);
    ASSERT_NE(it, seen.end()) << "partner missing: " << partner;
    EXPECT_EQ(it->second.length, s.length) << "partner " << partner;
    EXPECT_EQ(it->second.uncertain, s.uncertain) << "partner " << partner;
  }
}

// Waits on `partners` distinct partners (of a world of 10^5), in random
// order, each partner met several times; every `uncertain_every`-th wait
// uncertain (0: none).
void run(size_t partners, int uncertain_every, std::map<int32_t, Sums>& want, PartnerWaits& got,
         PartnerWaits* reversed = nullptr) {
  std::mt19937_64 rng(partners * 7 + static_cast<size_t>(uncertain_every));
  std::vector<int32_t> pool;
  std::uniform_int_distribution<int32_t> world(0, 99999);
  while (pool.size() < partners) {
    const int32_t p = world(rng);
    if (!want.count(p)) {
      want[p];
      pool.push_back(p);
    }
  }
  want.clear();
  std::uniform_real_distribution<double> ns(1.0, 1e6);
  std::vector<PartnerWaitAcc> waits;
  for (size_t k = 0; k < partners * 5; ++k) {
    // New partners arrive throughout, old ones come back.
    const int32_t p = pool[std::uniform_int_distribution<size_t>(0, std::min(pool.size() - 1, k / 3))(rng)];
    const Instant length = to_instant(ns(rng));
    const Instant uncertain = uncertain_every != 0 && k % static_cast<size_t>(uncertain_every) == 0 ? length : 0;
    got.add(p, length, uncertain);
    waits.push_back(PartnerWaitAcc{p, length, uncertain});
    Sums& s = want[p];
    s.length += length;
    s.uncertain += uncertain;
  }
  if (reversed)
    for (auto it = waits.rbegin(); it != waits.rend(); ++it) reversed->add(it->partner, it->length, it->uncertain);
}

TEST(PartnerWaits, SumsEachPartnersWaitsInAnyOrder) {
  for (size_t partners : {1, 5, 16, 17, 40, 1000, 20000}) {
    for (int uncertain_every : {0, 7}) {
      std::map<int32_t, Sums> want;
      PartnerWaits got, reversed;
      run(partners, uncertain_every, want, got, &reversed);
      expect_same(got, want);
      expect_same(reversed, want);
      // A list sent to another process and taken back there.
      PartnerWaits copy;
      copy.assign(got.list());
      expect_same(copy, want);
    }
  }
}

// 12 bytes a partner once the pass is over (its capacity shrunk), 20 with
// uncertain waits: a wide run's ranks wait on thousands of partners in each
// node.
TEST(PartnerWaits, KeepsTwelveBytesAPartner) {
  for (int uncertain_every : {0, 7}) {
    std::map<int32_t, Sums> want;
    PartnerWaits got;
    run(20000, uncertain_every, want, got);
    got.shrink();
    EXPECT_LE(got.bytes(), got.size() * (uncertain_every == 0 ? 12 : 20));
  }
}

}  // namespace
}  // namespace prof::analysis::detail

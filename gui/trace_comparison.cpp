#include "trace_comparison.h"

#include "prof/analysis/characteristics.h"
#include "trace_session.h"

namespace prof::gui {

QString ComparedColumn::label() const {
  const QString name = QString::fromUtf8(analysis::kMainCharacteristics[characteristic].name());
  return mean_per_rank ? QStringLiteral("%1 (mean per rank)").arg(name) : name;
}

double ComparedColumn::value(const analysis::IntervalNode& n) const {
  const double v = analysis::kMainCharacteristics[characteristic].value(n.main);
  if (!mean_per_rank) return v;
  return n.main.processors > 0 ? v / n.main.processors : 0.0;  // as compare.cpp's JSON `mean_a`/`mean_b`
}

std::shared_ptr<const TraceComparison> TraceComparison::make(const QString& a_dir,
                                                             std::shared_ptr<const analysis::Analysis> a,
                                                             const QString& b_dir,
                                                             std::shared_ptr<const analysis::Analysis> b) {
  auto c = std::make_shared<TraceComparison>();
  c->a_dir = a_dir;
  c->b_dir = b_dir;
  c->a = std::move(a);
  c->b = std::move(b);
  c->comparison = analysis::compare(*c->a, *c->b);
  c->b_of_a.assign(c->a->intervals.size(), -1);
  const analysis::IntervalNode* a0 = c->a->intervals.data();
  const analysis::IntervalNode* b0 = c->b->intervals.data();
  c->a_of_b.assign(c->b->intervals.size(), -1);
  for (const analysis::ComparedInterval& e : c->comparison.matched) {
    c->b_of_a[static_cast<size_t>(e.a - a0)] = static_cast<int>(e.b - b0);
    c->a_of_b[static_cast<size_t>(e.b - b0)] = static_cast<int>(e.a - a0);
  }
  // A B interval's row: its match's in A, else its own after A's. B's tree
  // order puts a parent before its children, so a parent's row is known first.
  const int a_size = static_cast<int>(c->a->intervals.size());
  std::vector<int> row_of_b(c->b->intervals.size(), -1);
  for (size_t i = 0; i < c->b->intervals.size(); ++i) {
    if (c->a_of_b[i] >= 0) {
      row_of_b[i] = c->a_of_b[i];
      continue;
    }
    const int parent = c->b->intervals[i].parent;
    row_of_b[i] = a_size + static_cast<int>(c->only_in_b.size());
    c->only_in_b.push_back(static_cast<int>(i));
    c->only_in_b_parent_row.push_back(parent >= 0 ? row_of_b[static_cast<size_t>(parent)] : 0);
  }
  return c;
}

const analysis::IntervalNode* TraceComparison::matched(int a_interval) const {
  if (a_interval < 0 || static_cast<size_t>(a_interval) >= b_of_a.size()) return nullptr;
  const int i = b_of_a[static_cast<size_t>(a_interval)];
  return i < 0 ? nullptr : &b->intervals[static_cast<size_t>(i)];
}

const analysis::IntervalNode* TraceComparison::matchedInA(int b_interval) const {
  if (b_interval < 0 || static_cast<size_t>(b_interval) >= a_of_b.size()) return nullptr;
  const int i = a_of_b[static_cast<size_t>(b_interval)];
  return i < 0 ? nullptr : &a->intervals[static_cast<size_t>(i)];
}

std::vector<ComparedColumn> TraceComparison::columns() const {
  std::vector<ComparedColumn> list;
  for (int k = 0; k < static_cast<int>(std::size(analysis::kMainCharacteristics)); ++k) {
    const analysis::MainCharacteristic& ch = analysis::kMainCharacteristics[k];
    if (!ch.compared) continue;
    list.push_back({k, false});
    if (ch.summed && !comparison.same_ranks()) list.push_back({k, true});
  }
  return list;
}

QString ratio_text(double a, double b) {
  if (a == 0) return b == 0 ? QStringLiteral("-") : QStringLiteral("inf");
  return QString::asprintf("%.3f", b / a);
}

QString difference_text(double d) {
  const QString t = seconds_text(d);
  return t.startsWith('-') ? t : '+' + t;
}

}  // namespace prof::gui

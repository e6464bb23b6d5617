// The timeline: a row per rank and thread, a time ruler, calls coloured by
// kind with a legend, message arrows, the selected interval's executions.
//
// Drawing never touches more than the screen can show: each frame asks the
// timeline layer for the visible range at one bucket per pixel column, and a
// row with more than two calls per column comes back as per-bucket summaries
// from its level-of-detail pyramid (drawn as stacked kind fractions). So a
// frame costs O(pixels + calls shown), whatever the trace's size. A row
// whose pixel columns are finer than its pyramid's leaves is summarized
// by the layer from its calls; when a count at leaf resolution says that
// would read more than kFineBudget calls, the row is drawn from the leaves
// (wider columns) instead, so that cost stays bounded too. Rows are
// drawn into a QImage by spans, then overlays (markers, waits, arrows,
// highlights, ruler, legend) with QPainter. Waits are the analysis's
// PotentSync instants (a late sender from the receive's issue, so partly
// outside MPI calls after an MPI_Irecv; a collective member until the last
// member enters): their tooltip names the kind, the late partner and how
// long, and a dashed arrow joins each to the partner's call that released it
// (every wait in view when few, else the one under the mouse). Tooltips also
// name the user code between calls (UserCode, from and to the neighbouring
// MPI calls) and the message under an arrow (bytes, tag, latency); each kind
// has a describe* function that gives its lines. The selected interval is outlined
// in the rows' 1-px margins and marked in a strip at the ruler's foot, never
// painted over the calls.
//
// Rows: the shown rows (all but those the user hid) are laid out in slots of
// equal height. At first every row fits: a slot is the plot's height over
// the rows (at most kMaxRowHeight), down to a fraction of a pixel. Below
// kGroupRowHeight px a row is too thin for calls, and the rows are drawn as
// groups: a group is a row (slots of 1 px or more) or the rows whose slots
// start in one pixel row (4 or 5 of 4,096 ranks at 850 px), summarized by the timeline layer per time bucket (what
// its rows did: the dominant kind's colour, its strength the share of the
// rows' time in MPI), with the rank range in the tooltip. Rows drawn from
// summaries and groups keep the potential-sync overlay: each bucket's waiting
// fraction (its PotentSync time over its rows' time: the timeline layer's
// TimelineBucket::wait) blends the wait colour by that fraction over the
// row's lower third, as waits are drawn on rows drawn call by call (a group
// under 3 px: over all of it). Zooming rows
// (Shift+wheel about the cursor, Ctrl++ / Ctrl+-, Ctrl+0 to fit all) scales
// the slots, so groups split until single rows show their calls; rows that
// then need more than the plot's height scroll (a pixel offset into the
// slots). Only the rows or groups in sight are queried and drawn. A group
// bucket's colours are kept from frame to frame (GroupCells) while the groups
// and the grid stay, so a pan reads only the buckets that came into view, a
// zoom in on the same grid none, and drawing is a line of colours per group
// copied down its pixel rows: after the first frame of a grid, a frame's cost
// is O(pixels + what came into view), not O(ranks * buckets).
//
// Interaction: wheel zooms about the cursor while every row fits; when they
// overflow, the wheel scrolls rows and Ctrl+wheel zooms. Shift+wheel zooms
// rows. Left drag pans, shift+left drag or right drag zooms to the dragged
// range, keys: left/right pan, up/down and page up/down scroll rows, +/-
// zoom, Ctrl++/Ctrl+-/Ctrl+0 zoom rows, Home shows everything.
// The user's navigation keeps the range inside [0, the trace's end] and at
// least 10 ns wide: panning stops at either end, zooming out stops at the
// whole run.
//
// Zoom history: each act of navigation (a zoom by wheel, key or menu, the
// end of a pan by drag or key, a zoom to a dragged range, Fit, a find or a
// selection that moves the view) records the view before and after it
// (range, row zoom, scroll) in a list with a current entry, as a browser
// does: back() and forward() move along it and restore that entry; a new act
// after back() drops the entries ahead. Entries compare by range and row
// zoom only, so scrolling rows alone records nothing. Wheel zooms less
// than 400 ms apart are one gesture and leave one entry.
// Interval nesting: rows drawn call by call (and tall enough) keep a track at
// their top, a band per level of the interval tree, each execution in the
// query's answer drawn in its level's band. Rows drawn from summaries keep
// the track too: the layer answers them with their executions merged per
// level and read a few per pixel column (TimelineRowAnswer), so the bands
// show the same structure as a single rank's row drawn call by call, which
// is what a Vampir user reads a rank's row for. Groups (under 3 px) have no
// room for a track.
// A right click on a row label opens the row menu (hide it, show only its
// rank, show all). A click on a call emits callClicked (its innermost
// interval execution's node). Times are ns from the trace's start.
#pragma once

#include <QElapsedTimer>
#include <QImage>
#include <QTimer>
#include <QWidget>
#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <memory>
#include <optional>
#include <vector>

#include "prof/analysis/analysis.h"
#include "prof/analysis/timeline.h"

class QMenu;
class QScrollBar;

namespace prof::gui {

QColor kind_color(analysis::TimelineKind kind);
QColor waiting_color();

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  // The ruler's ticks as drawn: position, and the label with its box (empty
  // where it would overlap the one before it).
  struct RulerTick {
    int x;
    QString label;
    QRect label_rect;
  };
  std::vector<RulerTick> rulerTicks() const;
  explicit TimelineView(QWidget* parent = nullptr);

  void setTimeline(std::shared_ptr<analysis::Timeline> timeline);
  const analysis::Timeline* timeline() const { return timeline_.get(); }
  // How each rank's recording ended (the analysis's run_end), once the
  // analysis is done: a call in flight then says so in its tooltip, with its
  // call site and the ranks it waited for. Cleared by setTimeline.
  void setRunEnd(std::vector<analysis::RankEnd> run_end) { run_end_ = std::move(run_end); }

  double from() const { return from_; }
  double to() const { return to_; }
  // Shows [from, to) ns (at least 10 ns wide), as given. Records no history:
  // callers that act for the user remember().
  void setRange(double from, double to);
  // As the user navigates: the range moved (then cut) to lie inside [0, end].
  void navigateTo(double from, double to);
  void showAll();
  void setArrows(bool on);
  // While building, and until the user zooms: the range grows to the end
  // built so far (a timer calls this; so does the loader's end).
  void followBuild();
  bool arrows() const { return arrows_; }
  // Where the figure in the view's corner comes from while a trace loads:
  // while `source` gives a value, the corner says "loading N%" of it (a
  // window passes its loader's progress(), the status bar's figure, so the
  // two never disagree); else, while the timeline builds, "building N%" of
  // Timeline::built().
  void setProgressSource(std::function<std::optional<double>()> source) { progress_source_ = std::move(source); }
  // The corner's text as the next frame draws it ("" once built).
  QString progressText() const;

  // What the history records of the view.
  struct ViewState {
    double from, to, row_zoom;
    int scroll;
    bool sameView(const ViewState& o) const;  // range and row zoom equal
  };
  ViewState viewState() const;
  // Records an act of navigation that started from `before` and ended in
  // the current view (nothing when they are the same view).
  void remember(const ViewState& before);
  bool canGoBack() const;
  bool canGoForward() const;
  void back();
  void forward();
  static constexpr size_t kMaxHistory = 200;

  // The widget as drawn, to a PNG file of its size, or to an SVG file (the
  // rows as one embedded image, ruler, labels, legend and overlays as
  // vector shapes and text). False when the file cannot be written.
  bool exportPng(const QString& path);
  bool exportSvg(const QString& path);
  // Shows the executions of a timeline node (-1: none); returns the first one
  // (earliest start over rows), if any.
  std::optional<analysis::TimelineExecution> highlightNode(int node);
  int highlightedNode() const { return highlight_node_; }

  // Geometry, for tests and callers: the drawing area and time <-> x.
  QRect plotRect() const;
  double xOf(double t) const;
  double timeAt(double x) const;
  int rowAt(int y) const;  // the row drawn at y; -1 outside the rows
  int rowCenterY(size_t row) const;  // may lie outside the plot (scrolled away); -1: hidden
  double rowHeight() const;

  // Rows shown (not hidden), in row order; those at least partly in the plot.
  const std::vector<size_t>& shownRows() const { return shown_; }
  std::vector<size_t> visibleRows() const;
  bool rowHidden(size_t row) const { return row < hidden_.size() && hidden_[row]; }
  void setRowHidden(size_t row, bool hidden);
  void showOnlyRank(int rank);  // every row (thread) of that rank
  void showAllRows();
  // The row menu of a label: hide this row, show only this rank, show all.
  void populateRowMenu(QMenu& menu, size_t row);
  // Row zoom: the slots' height over the height at which every row fits
  // (1: all fit; at most what makes a slot kMaxRowHeight px).
  double rowZoom() const { return row_zoom_; }
  double maxRowZoom() const;
  void setRowZoom(double zoom, int about_y = -1);  // about a y of the widget (-1: the plot's top)
  void fitRows() { setRowZoom(1); }
  // Groups: rows drawn as per-pixel-row summaries (slots below kGroupRowHeight px).
  bool grouped() const { return rowHeight() < kGroupRowHeight; }
  size_t rowsPerGroup() const;  // the most rows a group holds (1 unless slots are under a pixel)
  // The groups in sight, as [first, end) indices into shownRows().
  std::vector<std::pair<size_t, size_t>> visibleGroups() const;
  // The group drawn at y ([first, end) into shownRows()); nullopt outside.
  std::optional<std::pair<size_t, size_t>> groupAt(int y) const;
  // Vertical scrolling (px into the slots); 0 when every row fits.
  bool rowsOverflow() const;
  int verticalScroll() const { return scroll_; }
  int maxVerticalScroll() const;
  void setVerticalScroll(int px);
  void scrollToRow(size_t row);  // the least scroll that shows the whole row
  QScrollBar* verticalBar() const { return bar_; }

  // The call drawn at a point (a summary's longest call there), if any.
  std::optional<analysis::TimelineCall> callAt(QPoint p) const;
  QString tooltipAt(QPoint p) const;
  // The tooltip's lines for a call (function and kind first).
  QStringList describeCall(const analysis::TimelineCall& c) const;
  // User code on a row at time t: the span between the MPI calls around t
  // (markers do not split it), from the previous call's leave (else the
  // rank's start) to the next call's enter (else the rank's end). None on a
  // call or outside the rank's run.
  struct UserSpan {
    size_t row = 0;
    double from = 0, to = 0;  // ns
    std::optional<analysis::TimelineCall> before, after;
  };
  std::optional<UserSpan> userCodeAt(size_t row, double t) const;
  QStringList describeUserCode(const UserSpan& span) const;
  // The message arrow drawn within 3 px of a point (the nearest), if any.
  std::optional<analysis::TimelineMessage> messageAt(QPoint p) const;
  // A message's lines: ranks, bytes, tag, latency (send's enter to the receive's return).
  QStringList describeMessage(const analysis::TimelineMessage& m) const;

  // Find: the next (forward) or previous call of any of the MPI functions in
  // time order (enter, then row) over the shown rows, from the selected call
  // when it lies in the visible range, else from the range's start, passing
  // the filter (at least min_duration ns long; with peer >= 0, that peer).
  // None that way: the search wraps around (from the trace's start, or its
  // end) and wrappedAround() says so. The call found is selected (outlined),
  // its row scrolled into sight, and the range moved (zoomed when it would be
  // under 2 px) so that it shows; none found: nothing changes. Cost: one
  // Timeline::find_call per shown row and function, and one more per call
  // the filter turns down. Calls from given sites: the function "" (every
  // call and marker), the filter keeping those whose Timeline::call_site is
  // one of them.
  struct FindFilter {
    double min_duration = 0;      // ns
    int peer = -1;                // -1: any
    std::vector<uint32_t> sites;  // Timeline::site indices; empty: any
  };
  std::optional<analysis::TimelineCall> findCall(const std::vector<std::string>& functions, bool forward,
                                                 const FindFilter& filter);
  std::optional<analysis::TimelineCall> findCall(std::string_view function, bool forward) {
    return findCall(std::vector<std::string>{std::string(function)}, forward, FindFilter{});
  }
  // Find an interval: the next (forward) or previous execution of any of the
  // timeline nodes in (start, row) order over the shown rows, at least
  // min_duration ns long, from the last one found when it starts in the
  // visible range, else from the range's start; wrapping around as findCall
  // does. The one found gets its row scrolled into sight and the range
  // zoomed to it (a tenth of it as margin on each side, as selecting an
  // interval zooms to its first); none found: nothing changes. Cost: every
  // execution of the shown rows (Timeline::executions).
  std::optional<analysis::TimelineExecution> findExecution(const std::vector<uint32_t>& nodes, bool forward,
                                                           double min_duration = 0);
  bool wrappedAround() const { return wrapped_; }
  const std::optional<analysis::TimelineCall>& selectedCall() const { return selected_call_; }
  void setSelectedCall(std::optional<analysis::TimelineCall> call);
  // The innermost interval execution on a row containing time t.
  std::optional<analysis::TimelineExecution> executionAt(size_t row, double t) const;

  // What the last frame drew: the calls of rows drawn call by call, the
  // number of rows drawn from summaries, the arrows drawn.
  const std::vector<analysis::TimelineCall>& drawnCalls() const { return drawn_calls_; }
  size_t summarizedRows() const { return summarized_rows_; }
  // The width (ns) of a row's summary buckets in the last frame (0: calls).
  double drawnBucketWidth(size_t row) const { return row < bucket_widths_.size() ? bucket_widths_[row] : 0; }
  size_t drawnArrows() const { return drawn_arrows_; }
  // A wait the last frame drew (a message's late sender, from the receive's
  // issue; a collective member's wait for the last member to enter): the
  // waiting call, the span, and the partner's call that released it.
  struct DrawnWait {
    size_t row = 0;
    uint64_t index = 0;         // the waiting call (the receive's completing call, or the collective call)
    double begin = 0, end = 0;  // ns
    bool message = true;
    size_t member = 0;          // a collective: the waiting member's position in its instance
    size_t partner_row = 0;
    uint64_t partner_index = 0;
    double partner_enter = 0;   // ns: the send's, or the last member's, enter
  };
  const std::vector<DrawnWait>& drawnWaits() const { return drawn_waits_; }
  // The wait drawn at a point (its span on its row), if any.
  std::optional<DrawnWait> waitAt(QPoint p) const;
  // A wait's kind (analysis::WaitKind) as the analysis names it.
  int waitKind(const DrawnWait& w) const;
  // Arrows from each waiting call to its releasing call: for the wait under
  // the mouse (tooltip), and for every wait in view when at most this many.
  static constexpr size_t kMaxWaitArrows = 64;
  size_t drawnWaitArrows() const { return drawn_wait_arrows_; }
  // At most this many messages visible, and one per kPixelsPerArrow of the
  // timeline's width: arrows are drawn. Denser, they would merge into a dark
  // block hiding the calls under them.
  static constexpr size_t kMaxArrows = 400;
  static constexpr int kPixelsPerArrow = 16;
  static size_t maxArrows(int width) {
    return std::min(kMaxArrows, static_cast<size_t>(std::max(1, width / kPixelsPerArrow)));
  }
  // A row summarized from its calls reads at most about this many per frame.
  static constexpr uint64_t kFineBudget = 8000;
  // Rows lower than this (px) are drawn as groups; labels need kLabelRowHeight.
  static constexpr double kGroupRowHeight = 3;
  static constexpr double kLabelRowHeight = 12;
  static constexpr double kMaxRowHeight = 44;
  // Interval nesting: rows drawn call by call and at least kBandRowHeight px
  // high keep a track at their top, one band of kBandHeight px per level of
  // the interval tree (level 1 at the top, at most kMaxBandLevels), each
  // execution of an interval drawn in its level's band. The bands the last
  // frame drew (every execution overlapping the range, clipped to nothing):
  struct DrawnBand {
    size_t row;
    int level;
    double start, end;  // ns, the execution's
    uint32_t node;
  };
  const std::vector<DrawnBand>& drawnBands() const { return drawn_bands_; }
  static constexpr double kBandRowHeight = 16;
  static constexpr int kBandHeight = 2;
  static constexpr int kMaxBandLevels = 4;
  // The potential-sync overlay of a row drawn from summaries, or of a group,
  // at a point of the last frame: the bucket, the rows it stands for, and its
  // waiting fraction (wait over rows * bucket width, 0..1).
  struct SummaryWait {
    double from = 0, to = 0;  // ns
    size_t first_row = 0, rows = 1;  // [first, first + rows) of shownRows() (a group), or the row itself
    double fraction = 0;
  };
  std::optional<SummaryWait> summaryWaitAt(QPoint p) const;
  // What the last frame drew from group summaries: groups and their rows.
  size_t drawnGroups() const { return drawn_groups_; }
  size_t drawnGroupRows() const { return drawn_group_rows_; }
  // The work of the last frame's groups: row cells asked of the timeline (a
  // row's summary bucket summed into its group), counted per row and bucket.
  // Buckets kept from earlier frames cost none (see GroupCells).
  uint64_t groupCellsRead() const { return group_cells_read_; }

 signals:
  void rangeChanged(double from, double to);
  void historyChanged();  // canGoBack() or canGoForward() may have changed
  // A zoom to a dragged range (after rangeChanged).
  void rangeDragged(double from, double to);
  void callClicked(size_t row, qulonglong index, int node);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void contextMenuEvent(QContextMenuEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  bool event(QEvent*) override;

 private:
  void zoomAbout(double t, double factor);
  void restore(const ViewState& state);
  analysis::TimelineAnswer frameAnswer(uint32_t width) const;
  void drawGroups(QImage& image);
  QString groupTooltip(QPoint p) const;
  int plotHeight() const;
  void drawRows(QImage& image, const analysis::TimelineAnswer& answer);
  void drawOverlays(QPainter& p, const analysis::TimelineAnswer& answer);
  void drawRuler(QPainter& p);
  void drawLegend(QPainter& p);
  void rowsChanged();  // after hiding or showing: slots, scroll bar, repaint
  void layoutBar();
  double slotTop(size_t row) const;  // y of the row's slot in the plot (0: plot top)

  std::shared_ptr<analysis::Timeline> timeline_;
  double from_ = 0, to_ = 1;
  bool follow_end_ = true;  // no zoom yet: the range grows with the build
  bool arrows_ = true;
  std::function<std::optional<double>()> progress_source_;
  std::vector<analysis::RankEnd> run_end_;  // (setRunEnd)
  // The call in flight at its rank's end that `c` is, with its rank's end; nulls when none.
  std::pair<const analysis::CallInFlight*, const analysis::RankEnd*> inFlight(const analysis::TimelineCall& c) const;
  int highlight_node_ = -1;
  std::vector<std::vector<analysis::TimelineExecution>> highlight_;  // per row, by start
  QTimer build_timer_;
  QImage image_;  // the rows, reused from frame to frame
  std::vector<char> hidden_;   // per row
  std::vector<size_t> shown_;  // rows not hidden, in order
  std::vector<int> slot_;      // per row: its index in shown_ (-1: hidden)
  int scroll_ = 0;
  double row_zoom_ = 1;
  QScrollBar* bar_ = nullptr;
  // The row labels as drawn for (scroll, row height, plot height, rows shown):
  // text is the costliest part of a frame with many rows in sight.
  QImage labels_;
  std::tuple<int, double, int, std::vector<size_t>> labels_key_;

  enum class Drag { None, Pan, Range };
  Drag drag_ = Drag::None;
  QPoint press_, last_;
  bool moved_ = false;
  ViewState drag_start_{};
  std::vector<ViewState> history_;
  size_t history_pos_ = 0;  // the current entry (when history_ is not empty)
  bool restoring_ = false;
  bool wheel_zoomed_ = false;  // the last entry came from the wheel
  QElapsedTimer wheel_clock_;  // since that wheel zoom
  static constexpr qint64 kWheelGestureMs = 400;

  std::optional<analysis::TimelineCall> selected_call_;
  std::optional<analysis::TimelineExecution> found_execution_;  // findExecution's last
  bool wrapped_ = false;  // the last find wrapped around
  std::vector<analysis::TimelineCall> drawn_calls_;
  std::vector<DrawnWait> drawn_waits_;
  std::vector<DrawnBand> drawn_bands_;
  std::vector<analysis::TimelineMessage> drawn_messages_;  // arrows drawn, in drawing order
  std::optional<DrawnWait> hovered_wait_;
  size_t drawn_wait_arrows_ = 0;
  size_t summarized_rows_ = 0, drawn_arrows_ = 0, drawn_groups_ = 0, drawn_group_rows_ = 0;
  std::vector<double> bucket_widths_;
  // Per row drawn from summaries or group: lines [y0, y1) of the plot, the
  // grid, and its buckets' waiting fractions (SummaryWait), at
  // drawn_fractions_[fractions, fractions + buckets).
  struct DrawnSummary {
    int y0, y1;
    size_t first_row, rows;
    double bucket_from, bucket_width;
    size_t fractions, buckets;
  };
  std::vector<DrawnSummary> drawn_summaries_;
  std::vector<float> drawn_fractions_;

  // The groups' buckets as drawn, kept from frame to frame.
  //
  // A group bucket's colours depend only on the group's rows and the bucket,
  // never on the visible range: so while the groups (rows shown, row height)
  // and the grid (bucket width) stay, a frame computes only the buckets it
  // has not got (a pan: the columns that came into view; a zoom in on the
  // same grid: none) and draws the rest from here. The grid is the one
  // Timeline::summarize_groups chooses for the frame (a power-of-two
  // multiple of the rows' leaves, cell c = [c * width, (c + 1) * width)),
  // and a part is asked for on exactly that grid, so each cell is what one
  // query of the whole frame gives. Groups are numbered by ordinal (the pixel
  // row of the slots' content when several rows share one, else the slot);
  // the cells held are one rectangle of ordinals x cells. A frame inside it
  // computes nothing; one reaching past it grows it to the bounding box of
  // both while that holds at most twice the frame's cells, else starts anew
  // with the frame's (so it never holds more than twice what some frame
  // needed). Not kept: while the timeline builds
  // (cells change) and where the query sums a few calls on an exact grid
  // of its own (that grid moves with the range).
  struct GroupCell {
    QRgb fill = 0;       // 0: nothing drawn (no row time in the bucket)
    QRgb wait = 0;       // fill blended towards the wait colour by the fraction
    float fraction = 0;  // waiting fraction (SummaryWait)
  };
  struct GroupCells {
    const analysis::Timeline* timeline = nullptr;
    uint64_t rows_generation = 0;
    double row_height = 0;
    bool reusable = false;
    double origin = 0, width = 0;  // cell c: [origin + c * width, + width)
    size_t g0 = 0, g1 = 0;         // ordinals held
    int64_t c0 = 0, c1 = 0;        // cells held
    std::vector<GroupCell> cells;  // (g - g0) * (c1 - c0) + (c - c0)
    GroupCell& at(size_t g, int64_t c) {
      return cells[(g - g0) * static_cast<size_t>(c1 - c0) + static_cast<size_t>(c - c0)];
    }
  };
  GroupCells group_cells_;
  uint64_t rows_generation_ = 0;  // rowsChanged() counts: the groups may differ
  std::vector<double> row_leaves_;  // per row, once the build is complete
  uint64_t group_cells_read_ = 0;
  std::vector<int> edges_;  // a frame's bucket edges (px), reused
  // The rows of the group of an ordinal ([first, end) of shown_).
  std::pair<size_t, size_t> groupOfOrdinal(size_t ordinal) const;
  // Sets cells [c0, c1) of ordinals [g0, g1) from one summarize_groups on
  // the cells' grid; counts the row cells read.
  void computeGroupCells(size_t g0, size_t g1, int64_t c0, int64_t c1);
};

}  // namespace prof::gui

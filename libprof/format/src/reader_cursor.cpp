// One stream's records, decoded in order (RankTrace::Cursor): the cold paths
// of the decoder (damage, chunk ends) and the public cursor.
#include "reader_cursor.h"

namespace prof::trace {

void RankTrace::Cursor::Impl::bad_record(const uint8_t* at, int why, uint32_t detail) {
  switch (why) {
    case 0: bad(at, "trailing bytes shorter than a record header"); break;
    case 1: bad(at, "zero record header inside a sealed chunk"); break;
    case 2:
      bad(at, "record of " + std::to_string(detail) + " bytes overruns its chunk");
      break;
    case 3: bad(at, "long-time record without its time words"); break;
    case 4: bad(at, "unknown function id " + std::to_string(detail)); break;
    case 6:
      bad(at, "function " + std::to_string(detail) +
                  " refers to a communicator or request not given earlier in its chunk");
      break;
    default:
      bad(at, "payload too short for function " + std::to_string(detail));
      break;
  }
}

// The current chunk has fewer than 8 bytes left: reports a partial record,
// enters the next chunk; false (and the stream's accounting) at the end.
bool RankTrace::Cursor::Impl::chunk_end() {
  if (p != end) {
    bad_record(p, 0, 0);
    p = end;
  }
  if (next_chunk()) return true;
  if (!finished) {
    finished = true;
    flush();
  }
  return false;
}

RankTrace::Cursor::Cursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::Cursor::Cursor(Cursor&&) noexcept = default;
RankTrace::Cursor::~Cursor() = default;

RankTrace::Cursor RankTrace::stream(size_t index) const {
  auto c = std::make_unique<Cursor::Impl>();
  c->attach(impl_.get(), index);
  return Cursor(std::move(c));
}

bool RankTrace::Cursor::next(Event& e) {
  if (!impl_) [[unlikely]] return false;
  Impl& c = *impl_;
  if (c.ready) [[unlikely]] {  // never, unless shared with a merge
    c.decode(e);
    return true;
  }
  Impl::Prepared r;
  if (!c.scan(r)) return false;
  c.fill(e, r);
  return true;
}

}  // namespace prof::trace

// The trace format: the one contract between libprof (which writes it) and the
// analyzer (which reads it). Header-only, no dependencies beyond the C++ standard
// library, so the shim's hot path and every reader share the same definitions.
//
// A trace is a directory with one file per rank, `rank-NNNNN.prof`:
//
//   FileHeader (64 bytes, offset 0)
//   Chunk*     each: ChunkHeader (32 bytes) + `capacity` bytes of payload,
//              8-byte aligned; zero bytes may pad the space between chunks.
//
// Chunks carry their length, so a reader skips the types it does not know
// (OTF2's rule). Two kinds of chunk:
//   - Definitions (text, one TAB-separated line per definition, see DefKind):
//     functions, communicators, call sites, the load map, clock sync, metadata.
//     Written whole and sealed at once.
//   - Events (binary records, RecordHeader + payload words): one stream per
//     thread. Written in place through a file-backed mapping, so every record is
//     in the page cache the moment it is stored and survives SIGKILL. A chunk is
//     sealed (used length + CRC-32) when it fills or the process ends; an
//     unsealed chunk is read up to the first zero word (a record's first word is
//     stored last and is never zero), which is how a killed rank is salvaged.
//
// Timestamps are raw timer ticks; the Meta definitions give ticks->ns and the
// ClockSync definitions the offset to rank 0's clock.
//
// Everything of the format in one include: the layout and constants
// (trace_layout.h), the record encoders (record_encoders.h) and the chunk
// checksum (crc32c.h).
#pragma once

#include "prof/crc32c.h"
#include "prof/record_encoders.h"
#include "prof/trace_layout.h"

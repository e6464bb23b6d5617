// What MPICH's MPI_Status and datatype handles hold, read in place on the hot path.
//
// MPICH keeps a status's count in bytes: the low 32 bits in count_lo, the
// bits above them in count_hi_and_cancelled shifted up by one, whose bit 0 is
// the cancel flag (MPICH's mpir_status.h). MPI_Get_count_c(st, MPI_BYTE) and
// MPI_Test_cancelled return exactly these, but as calls into MPICH with
// argument checks: 70 to 110 instructions each on every receive and every
// completed request, more than the rest of a wrapper. tests/shim's
// status_decode test holds this layout against those two calls.
#pragma once

#include <mpi.h>

#include <cstdint>

#ifndef MPICH
#error "libprof reads MPICH's MPI_Status layout (mpich_status.h)"
#endif

namespace prof::shim {

inline __attribute__((always_inline)) uint64_t status_bytes(const MPI_Status* st) {
  return (uint64_t{static_cast<uint32_t>(st->count_hi_and_cancelled) >> 1} << 32) |
         static_cast<uint32_t>(st->count_lo);
}

inline __attribute__((always_inline)) bool status_cancelled(const MPI_Status* st) {
  return (st->count_hi_and_cancelled & 1) != 0;
}

// MPICH's datatype handles: a builtin one has kind 1 in its top two bits
// (MPI_DATATYPE_NULL has 0, derived types 2 or 3) and its size in bytes in
// bits 8-15 (MPICH's MPIR_Datatype_get_basic_size). tests/shim's
// status_decode test holds this against MPI_Type_size.
// not_builtin_type: 0 for a builtin handle, else not 0 (less 2^30, a builtin
// handle's top two bits are 00: one subtraction and a shift).
inline __attribute__((always_inline)) uint32_t not_builtin_type(MPI_Datatype t) {
  return (static_cast<uint32_t>(t) - 0x40000000u) >> 30;
}
inline __attribute__((always_inline)) uint32_t builtin_type_size(MPI_Datatype t) {
  return (static_cast<uint32_t>(t) >> 8) & 0xFFu;
}

}  // namespace prof::shim

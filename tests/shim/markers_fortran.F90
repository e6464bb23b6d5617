! Interval markers through the prof_markers module: must run unchanged without
! the profiler and record begin/end with this file's lines under it.
program markers_fortran
  use mpi
  use prof_markers
  implicit none
  integer :: ierr, rank, value
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  value = 0
  call prof_interval_begin(7, __FILE__, __LINE__)
  if (rank == 0) value = 42
  call MPI_Bcast(value, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call prof_interval_end(7, __FILE__, __LINE__)
  print '(A,I0,A,I0)', 'rank ', rank, ' value ', value
  call MPI_Finalize(ierr)
  if (value /= 42) stop 1
end program markers_fortran

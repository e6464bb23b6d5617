! MPI_Allreduce from two source lines a known number of times each (5, then
! 3 inside interval 7), through MPICH's Fortran binding: the call-site
! profile must name this file's lines, not the binding's.
program callsites_fortran
  use mpi
  use prof_markers
  implicit none
  integer :: ierr, rank, i, out, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  total = 0
  do i = 1, 5
    call MPI_Allreduce(rank, out, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr) ! line 13
    total = total + out
  end do
  call prof_interval_begin(7, __FILE__, __LINE__)
  do i = 1, 3
    call MPI_Allreduce(rank, out, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr) ! line 18
    total = total + out
  end do
  call prof_interval_end(7, __FILE__, __LINE__)
  print '(A,I0,A,I0)', 'rank ', rank, ' total ', total
  call MPI_Finalize(ierr)
  if (total /= 8) stop 1
end program callsites_fortran

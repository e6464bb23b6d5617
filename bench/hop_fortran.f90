! The Fortran ping-pong whose shim cost bench/count_hop_instructions.sh counts
! under callgrind: N round trips of 0-byte MPI_Send/MPI_Recv between ranks 0
! and 1 through MPICH's Fortran binding (MPI_STATUS_IGNORE), as hop_calls
! pingpong N does in C. Usage: hop_fortran N
program hop_fortran
  use mpi
  implicit none
  integer :: ierr, rank, i, n, buf(1)
  character(len=32) :: arg
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, arg)
  read (arg, *) n
  do i = 1, n
    if (rank == 0) then
      call MPI_Send(buf, 0, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 0, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else if (rank == 1) then
      call MPI_Recv(buf, 0, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(buf, 0, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, ierr)
    end if
  end do
  call MPI_Finalize(ierr)
end program hop_fortran

! MPI_Send and MPI_Recv through MPICH's Fortran binding from two source lines
! each per rank, alternating, N times each: rank 0 sends 1 integer from line
! 20 and 2 from line 22, receiving between; rank 1 receives and replies. Then
! each rank posts an MPI_Irecv (line 24 or 32) and an MPI_Isend (25 or 33) of 1
! integer and completes both in one MPI_Waitall (26 or 34). Every line's calls
! and bytes must be its own (the binding's sites are told apart call by call).
! Usage: fortran_p2p_sites N
program fortran_p2p_sites
  use mpi
  implicit none
  integer :: ierr, rank, i, n, buf(2), inbox(1), requests(2)
  character(len=32) :: arg
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, arg)
  read (arg, *) n
  buf = 0
  do i = 1, n
    if (rank == 0) then
      call MPI_Send(buf, 1, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 1, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(buf, 2, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 2, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Irecv(inbox, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, requests(1), ierr)
      call MPI_Isend(buf, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, requests(2), ierr)
      call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    else if (rank == 1) then
      call MPI_Recv(buf, 1, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(buf, 1, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 2, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(buf, 2, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, ierr)
      call MPI_Irecv(inbox, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, requests(1), ierr)
      call MPI_Isend(buf, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, requests(2), ierr)
      call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    end if
  end do
  if (rank == 0) print '(A,I0)', 'round trips ', 2 * n
  call MPI_Finalize(ierr)
end program fortran_p2p_sites

! hang.c's deadlock from Fortran (`use mpi`), for hang.sh: the calls in flight
! must name this file's lines, not MPICH's Fortran binding library.
!
!   hang_fortran deadlock INFO_DIR   ranks 0 and 1 each wait in MPI_RECV for the
!                                    other, rank 2 (and any further rank) in
!                                    MPI_BARRIER; all inside interval 1. Never
!                                    returns: killed by hang.sh.
!
! Each rank writes INFO_DIR/info-R as hang.c does: "pid PID", then, just
! before the call it will not return from, "call FUNC FILE LINE WALL" (the C
! function the binding calls; WALL: CLOCK_REALTIME seconds).
program hang_fortran
  use mpi
  use iso_c_binding, only: c_int, c_long
  implicit none
  type, bind(C) :: timespec
    integer(c_long) :: sec, nsec
  end type timespec
  interface
    integer(c_int) function clock_gettime(clock, ts) bind(C, name='clock_gettime')
      import :: c_int, timespec
      integer(c_int), value :: clock
      type(timespec), intent(out) :: ts
    end function clock_gettime
    integer(c_int) function c_getpid() bind(C, name='getpid')
      import :: c_int
    end function c_getpid
  end interface
  integer :: ierr, rank, nprocs, x, u
  character(len=4096) :: mode, dir
  character(len=4200) :: path

  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  if (trim(mode) /= 'deadlock' .or. len_trim(dir) == 0) then
    print *, 'usage: hang_fortran deadlock INFO_DIR'
    stop 2
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  write(path, '(A,"/info-",I0)') trim(dir), rank
  open(newunit=u, file=trim(path), status='replace', action='write')
  write(u, '(A,I0)') 'pid ', c_getpid()
  flush(u)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  x = 0
  call marker(1, .true.)
  if (rank < 2) then
    call note('MPI_Recv', __LINE__ + 1)
    call MPI_Recv(x, 1, MPI_INTEGER, 1 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  else
    call note('MPI_Barrier', __LINE__ + 1)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if
  call marker(1, .false.)
  call MPI_Finalize(ierr)

contains

  ! "call FUNC FILE LINE WALL", flushed at once: hang.sh waits for it.
  subroutine note(func, line)
    character(len=*), intent(in) :: func
    integer, intent(in) :: line
    type(timespec) :: now
    if (clock_gettime(0_c_int, now) /= 0) stop 3  ! CLOCK_REALTIME
    write(u, '(A,A,A,I0,A,F0.6)') 'call ', func, ' hang_fortran.F90 ', line, ' ', &
        real(now%sec, 8) + real(now%nsec, 8) * 1d-9
    flush(u)
  end subroutine note

  ! A raw interval marker: MPI_Send to MPI_PROC_NULL with tag 0xAA<id>AA
  ! (begin) or 0xAA<id>BB (end).
  subroutine marker(id, begin)
    integer, intent(in) :: id
    logical, intent(in) :: begin
    integer :: tag, ierr2
    tag = ior(ior(ishft(int(z'AA'), 24), ishft(id, 8)), merge(int(z'AA'), int(z'BB'), begin))
    call MPI_Send(x, 0, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD, ierr2)
  end subroutine marker

end program hang_fortran

! Fortran through the shim (2 ranks): MPICH's Fortran bindings call the C
! MPI_* functions, which the shim wraps; each Fortran call must be recorded
! exactly once (no double counting through the binding layer), with the same
! arguments as from C. Also: MPI_IN_PLACE and MPI_STATUS_IGNORE from Fortran,
! and raw interval markers whose call site must resolve into this program (not
! into libmpichfort). File I/O: the shim's Fortran wrappers pass the file
! name's hidden length through (the file must land where it was named).
! Writes its expectation log like ex.h does (same grammar).
program fortran_basic
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, peer, i, k, u, failures, fh
  integer(kind=MPI_OFFSET_KIND) :: offset
  integer(kind=8) :: file_bytes
  integer :: status(MPI_STATUS_SIZE)
  double precision :: buf(10)
  integer :: ibuf(4), red(3)
  character(len=4096) :: dir
  character(len=4200) :: path

  failures = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 2) then
    print *, 'fortran_basic: run with 2 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  peer = 1 - rank

  call get_environment_variable('PROF_EXPECT_DIR', dir)
  if (len_trim(dir) == 0) dir = '.'
  write(path, '(A,"/expect-rank-",I5.5,".txt")') trim(dir), rank
  open(newunit=u, file=trim(path), status='replace', action='write')
  write(u, '(A)') 'MPI_Init'
  write(u, '(A)') 'MPI_Comm_rank'
  write(u, '(A)') 'MPI_Comm_size'

  call marker(1, .true.)

  ! Three broadcasts: three records, not six.
  do k = 1, 3
    if (rank == 0) then
      do i = 1, 10
        buf(i) = k * 100 + i
      end do
    else
      buf = 0
    end if
    call MPI_Bcast(buf, 10, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    write(u, '(A,A,A)') 'MPI_Bcast comm=', trim(hexs(MPI_COMM_WORLD)), ' root=0 bytes=80'
    ! Exact: the broadcast copies the value (a difference, not /=, for -Wcompare-reals).
    if (abs(buf(10) - (k * 100 + 10)) > 0d0) call fail('Bcast payload')
  end do

  ! Send/Recv: ANY_SOURCE with a status, then STATUS_IGNORE.
  if (rank == 0) then
    ibuf = (/ 1, 2, 3, 4 /)
    call MPI_Send(ibuf, 4, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, ierr)
    write(u, '(A,A,A)') 'MPI_Send peer=1 tag=7 comm=', trim(hexs(MPI_COMM_WORLD)), ' bytes=16'
    call MPI_Recv(ibuf, 4, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    write(u, '(A,A,A)') 'MPI_Recv peer=1 tag=8 comm=', trim(hexs(MPI_COMM_WORLD)), ' bytes=8'
    if (ibuf(1) /= 5 .or. ibuf(2) /= 6) call fail('Recv payload (STATUS_IGNORE)')
  else
    ibuf = 0
    call MPI_Recv(ibuf, 4, MPI_INTEGER, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, status, ierr)
    write(u, '(A,I0,A,A,A)') 'MPI_Recv peer=', status(MPI_SOURCE), ' tag=7 comm=', &
        trim(hexs(MPI_COMM_WORLD)), ' bytes=16 any_source=1'
    if (status(MPI_SOURCE) /= 0 .or. ibuf(4) /= 4) call fail('Recv status/payload')
    ibuf(1) = 5
    ibuf(2) = 6
    call MPI_Send(ibuf, 2, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, ierr)
    write(u, '(A,A,A)') 'MPI_Send peer=0 tag=8 comm=', trim(hexs(MPI_COMM_WORLD)), ' bytes=8'
  end if

  ! MPI_IN_PLACE from Fortran.
  red = (/ rank, 1, 10 * rank /)
  call MPI_Allreduce(MPI_IN_PLACE, red, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write(u, '(A,A,A)') 'MPI_Allreduce comm=', trim(hexs(MPI_COMM_WORLD)), ' root=-1 bytes=12'
  if (red(1) /= 1 .or. red(2) /= 2 .or. red(3) /= 10) call fail('Allreduce in place')

  ! A CHARACTER argument and collective I/O: the name's length travels as a
  ! hidden argument after ierr. MPICH's file bindings convert the file handle
  ! with the C MPI_File_c2f / MPI_File_f2c, which the shim records as the C
  ! calls they are.
  write(path, '(A,"/fortran-file-io.bin")') trim(dir)
  call MPI_File_open(MPI_COMM_WORLD, trim(path), ior(MPI_MODE_CREATE, MPI_MODE_WRONLY), &
      MPI_INFO_NULL, fh, ierr)
  write(u, '(A)') 'MPI_File_open'
  write(u, '(A)') 'MPI_File_c2f'
  if (ierr /= MPI_SUCCESS) call fail('File_open')
  offset = 16 * rank
  ibuf = (/ 10, 20, 30, 40 /) + rank
  call MPI_File_write_at_all(fh, offset, ibuf, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  write(u, '(A)') 'MPI_File_f2c'
  write(u, '(A)') 'MPI_File_write_at_all'
  if (ierr /= MPI_SUCCESS) call fail('File_write_at_all')
  call MPI_File_close(fh, ierr)
  write(u, '(A)') 'MPI_File_f2c'
  write(u, '(A)') 'MPI_File_close'
  write(u, '(A)') 'MPI_File_c2f'
  inquire(file=trim(path), size=file_bytes)
  if (file_bytes /= 32) call fail('the file is not where it was named, 32 bytes long')

  call marker(1, .false.)
  call marker(2, .true.)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  write(u, '(A,A,A)') 'MPI_Barrier comm=', trim(hexs(MPI_COMM_WORLD)), ' root=-1 bytes=0'
  call marker(2, .false.)

  call MPI_Finalize(ierr)
  write(u, '(A)') 'MPI_Finalize'
  close(u)
  if (failures /= 0) then
    print *, 'fortran_basic: rank', rank, ':', failures, 'wrong MPI result(s)'
    call exit(1)
  end if

contains

  ! A raw marker: MPI_Send to MPI_PROC_NULL with tag 0xAA<id>AA (begin) or
  ! 0xAA<id>BB (end).
  subroutine marker(id, begin)
    ! One call site for every marker (CMake builds this file without inlining).
    integer, intent(in) :: id
    logical, intent(in) :: begin
    integer :: tag, ierr2
    ! No branch around the call: the compiler keeps one call site.
    tag = ior(ior(ishft(int(z'AA'), 24), ishft(id, 8)), merge(int(z'AA'), int(z'BB'), begin))
    call MPI_Send(ibuf, 0, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD, ierr2)
    write(u, '(A,I0,A,I0,A)') 'MARKER id=', id, ' begin=', merge(1, 0, begin), &
        ' site=exe#marker_subroutine'
  end subroutine marker

  ! A handle as the checker writes it: 0x and lower-case hex digits.
  function hexs(h) result(s)
    integer, intent(in) :: h
    character(len=10) :: s
    character(len=8) :: digits
    integer :: j, first
    write(digits, '(Z8.8)') h
    do j = 1, 8
      if (digits(j:j) >= 'A' .and. digits(j:j) <= 'F') &
          digits(j:j) = achar(iachar(digits(j:j)) + 32)
    end do
    first = 1
    do while (first < 8 .and. digits(first:first) == '0')
      first = first + 1
    end do
    s = '0x' // digits(first:8)
  end function hexs

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'fortran_basic: rank', rank, ': MPI result check failed: ', what
    failures = failures + 1
  end subroutine fail

end program fortran_basic

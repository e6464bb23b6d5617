! Interval markers for Fortran. Compile this module with your program and link
! libprof_markers.a (from the same lib directory as libprof.so):
!
!   use prof_markers
!   call prof_interval_begin(1, __FILE__, __LINE__)   ! in a .F90 file (preprocessed)
!   ...
!   call prof_interval_end(1, __FILE__, __LINE__)
!
! or, without the preprocessor, pass any file name and line you like. Without
! the profiler loaded the calls do nothing, so the program runs unchanged.
module prof_markers
  use iso_c_binding, only: c_int, c_char
  implicit none
  private
  public :: prof_interval_begin, prof_interval_end

  interface
    subroutine prof_fortran_marker(id, begin, file, file_len, line) bind(C, name="prof_fortran_marker")
      import :: c_int, c_char
      integer(c_int), value :: id, begin, file_len, line
      character(kind=c_char), dimension(*) :: file
    end subroutine
  end interface

contains

  subroutine prof_interval_begin(id, file, line)
    integer, intent(in) :: id, line
    character(len=*), intent(in) :: file
    call prof_fortran_marker(int(id, c_int), 1_c_int, file, int(len(file), c_int), int(line, c_int))
  end subroutine

  subroutine prof_interval_end(id, file, line)
    integer, intent(in) :: id, line
    character(len=*), intent(in) :: file
    call prof_fortran_marker(int(id, c_int), 0_c_int, file, int(len(file), c_int), int(line, c_int))
  end subroutine

end module prof_markers

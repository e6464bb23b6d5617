# Timers and clock synchronization (clock.h / clock.cpp), linked into libprof.so
# and the clock tests. Included from libprof/src/CMakeLists.txt (and, guarded by
# `if(NOT TARGET prof_clock)`, from tests/clock).
add_library(prof_clock STATIC ${PROJECT_SOURCE_DIR}/libprof/src/clock.cpp)
# Linked into libprof.so, which exports only the MPI entry points.
set_target_properties(prof_clock PROPERTIES POSITION_INDEPENDENT_CODE ON
                      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(prof_clock PUBLIC ${PROJECT_SOURCE_DIR}/libprof/src)
target_link_libraries(prof_clock PUBLIC prof_format prof_mpi_headers)

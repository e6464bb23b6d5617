// Opens an MPI program's code at run time, local to itself (RTLD_LOCAL), as
// an interpreter opens its MPI module: the MPI library is not in the global
// scope. Usage: dlopen_main LIBRARY (which defines int run(void)).
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dlopen_main LIBRARY\n");
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "dlopen_main: %s\n", dlerror());
    return 2;
  }
  int (*run)(void) = (int (*)(void))dlsym(library, "run");
  if (!run) {
    fprintf(stderr, "dlopen_main: %s\n", dlerror());
    return 2;
  }
  return run();
}

/* Compiled from another directory with a relative path (tests/format/CMakeLists.txt),
 * so its line table names this file relative to a relative directory. */
int symbolizer_target_answer(int v) {
  return v * 42;
}

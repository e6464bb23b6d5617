// jemalloc's settings for prof-analyze (linked only where jemalloc is its
// allocator, analyzer/CMakeLists.txt).
//
// Transparent huge pages for jemalloc's extents. The pass first touches each
// rank's buffers (rings, batches, send queues, templates: about 66 KB a
// rank), and a page fault costs several microseconds where the kernel runs
// as a guest: 76,000 faults on 4096 ranks of 2x10^7 events, over a fifth of
// their CPU. A 2 MiB page takes one fault for 512 of them. The metadata only
// once it is large (`auto`): on huge pages from the start it cost every run
// about a millisecond of CPU before main. A user's MALLOC_CONF is read after
// this string (`MALLOC_CONF=thp:default` turns the extents' off), and the
// kernel's transparent_hugepage setting has the last word.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:auto";
}

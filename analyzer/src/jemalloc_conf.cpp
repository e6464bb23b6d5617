// jemalloc's settings for prof-analyze (linked only where jemalloc is its
// allocator, analyzer/CMakeLists.txt).
//
// Transparent huge pages for jemalloc's extents and metadata. The pass first
// touches each rank's buffers (rings, batches, send queues, templates: about
// 66 KB a rank), and a page fault costs several microseconds where the
// kernel runs as a guest: 76,000 faults on 4096 ranks of 2x10^7 events, over
// a fifth of its CPU. A 2 MiB page takes one fault for 512 of them. Memory
// given back (give_back_free_heap) splits a huge page as needed. A user's
// MALLOC_CONF is read after this string, so `MALLOC_CONF=thp:default` (or
// the kernel's transparent_hugepage=never) turns it off.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}

// Parameters of the shared-memory broadcast (Kurnosov and Tokmasheva's NUMA
// MPI_Bcast, docs/references.md): fragment size f, slots s per queue, sets q,
// the notification tree, and their defaults from the paper's cost model. The
// PROF_BCAST* settings that override them are read with the shim's others
// (prof/settings.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace prof::bcast {

enum class Impl { Native, Shm };
const char* impl_name(Impl impl);  // "native", "shm"

enum class TreeKind { Flat, Chain, Kary, Knomial };
struct TreeSpec {
  TreeKind kind = TreeKind::Kary;
  int k = 2;  // arity (kary) or radix (knomial)
};

// The paper's model (section 5.3): t(m, s) = ceil(m/b)(t_wo + t_A) + ceil(m/b) f t
// + (m/f) t_w + m t, minimised over f with the queue b = f s fixed, gives
// f* = sqrt(b t_w / t), rounded up to whole pages, and s* = b / f*. With the
// paper's model constants (t_w = 50 t) and a 1 MiB queue per process, f* = 8 KiB
// and s* = 128; q = 2 overlaps the wait for one set with filling the other.
constexpr std::size_t kModelQueueBytes = std::size_t(1) << 20;
constexpr double kModelNotifyOverCopyByte = 50.0;  // t_w / t
std::size_t model_fragment_bytes(std::size_t queue_bytes, std::size_t page_bytes);

struct Settings {
  Impl impl = Impl::Native;
  std::size_t fragment = 0;  // f, bytes, a multiple of the page size
  int slots = 0;             // s
  int sets = 2;              // q; s % q == 0
  TreeSpec tree;
  bool test_fail_shm = false;  // PROF_TEST_BCAST_FAIL_SHM=1
  int test_nodes = 0;          // PROF_TEST_NODES (read with the shim's settings): 0 = the real nodes
};

// The model's optimum for this machine's page size.
Settings default_settings();

std::size_t page_bytes();

bool parse_tree(const std::string& text, TreeSpec* out);
std::string tree_name(const TreeSpec& tree);

}  // namespace prof::bcast

// KVStore<Val>: the in-memory key -> row store behind KVStoreHandler. A row
// is the values of one key; keys may have rows of different widths.
//
// Layout. Rows of up to kMaxSlabRowBytes live in slabs: one pool per width,
// each a list of 2-4 MiB arrays of rows of that width (HugePageMemory, in
// huge pages from a pool's second slab on), so storing a key allocates
// nothing of its own (a freed row goes to its pool's free list).
// Larger rows (a 1 MiB value, say) each keep their own reference-counted
// SArray, as the store did before slabs: a pull of that one key answers
// with the row itself, without copying, and a later push writes a new array
// while an answer still shares the old one (copy on write).
//
// Rows of one 4-byte value (float, int32 at width 1) live in the index
// itself: the slot's row field holds the value's bits, so a lookup and its
// row are one cache line, one miss per key instead of two.
//
// Index. A RowIndex (open addressing) maps a key to its width and row id.
// Every request looks each key up once, in batches: the index slot of key
// i + 32 is prefetched while key i is handled, and the rows are prefetched
// in the same way when they are summed into or copied out. A key that is
// not in its home bucket (about 7% of them in an index 60% full, more as
// it fills) would stall the walk on a miss for the next bucket: the
// one-walk pull and the one-pass push look at the home bucket alone,
// prefetch the next one for such a key, and look it up there a stage
// later; a slab row found that way is copied out or written a stage after
// that, once its own prefetch is in. Such a key's copies all take that
// path, in order, so a key given twice is still applied in order.
//
// Push in two steps, so that a server can validate, acknowledge, then sum:
// PreparePush makes sure the push will apply (on error nothing has
// changed); CommitPush then sums (kSum) or copies (kAssign) the values
// into the rows and cannot fail. A key given twice in one push is applied
// twice, in order. PreparePush takes one of two paths:
//  - One pass, when no key of the push can be rejected: every key has as
//    many values, a row fits a slab, and either kAssign or every stored
//    row has that width (a kSum store of one width). PreparePush then only
//    reserves, without looking at any key: index room for every key to be
//    new, and as many free rows in the width's pool (mapping slabs up
//    front, so at most one request's worth of rows beyond what the keys
//    need). CommitPush looks each key up, inserting it, and sums or copies
//    in the same walk (the slot of key i + 64 and the row of key i + 32
//    prefetched while key i is applied), so a server that acknowledges
//    between the two does all of the per-key work after the answer left.
//  - Two passes, otherwise: PreparePush resolves every key to its row
//    (creating missing rows, undone on error) and checks widths; CommitPush
//    walks the resolved rows. In kSum mode, a push
// whose width for a key differs from the stored row's is rejected with
// InvalidArgument naming the key and both widths; in kAssign mode the row
// takes the pushed width. A key with no row yet takes the width of its
// first push either way.
//
// Key slices (PreparePushSlice): values [offset, offset + n) of a key with
// `total` values. A key without a row (or, in kAssign mode, with a row of
// another width) starts as `total` zeros.
//
// A pull copies the rows of the keys asked into one array; a key never
// pushed has length 0. When every row in use has one width and lives in a
// slab (the usual store), a pull looks each key up and copies its row in
// one walk, two stages ahead: key i + 2D's index bucket and key i + D's
// row are prefetched while key i is copied; a key without a row sends the
// pull to two passes (resolve every key, then copy), which answer lens.
// With a pull pool (set_pull_pool), a one-walk pull of at least
// kParallelPullKeys keys is cut into chunks that the pool's threads, the
// caller's included, walk at once: on a server whose worker waits for the
// answer, a second core shortens the time to the answer.
//
// Supported Val: float, double, int32_t, int64_t.
//
// Thread safety: not thread-safe; one call at a time. A pull answer may be
// read by other threads while the store goes on (it never writes an array
// an answer still holds).
#ifndef PETREL_STORE_KV_STORE_H_
#define PETREL_STORE_KV_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "base/huge_page_memory.h"
#include "base/row_index.h"
#include "base/shard_pool.h"
#include "store/kv_pairs.h"
#include "van/buffer.h"

namespace petrel {

template <typename Val>
class KVStore {
 public:
  enum class Mode { kSum, kAssign };
  // Rows larger than this are not kept in slabs (see above).
  static constexpr size_t kMaxSlabRowBytes = 4096;
  // The most values one key may have.
  static constexpr size_t kMaxWidth = RowIndex::kFreeSlot - 1;

  explicit KVStore(Mode mode = Mode::kSum);
  ~KVStore();
  KVStore(const KVStore&) = delete;
  KVStore& operator=(const KVStore&) = delete;

  // Resolves and checks a push of `keys` with `vals`: lens[i] values for
  // key i, or, when `lens` is empty, vals.size() / keys.size() each.
  // InvalidArgument, with nothing changed, for a width that disagrees with
  // a stored row (kSum), a negative length, lengths that do not add up to
  // the values, or a key over kMaxWidth values. The three arrays must stay
  // alive and unchanged until CommitPush.
  // REQUIRES: no push prepared and not committed.
  absl::Status PreparePush(absl::Span<const Key> keys,
                           absl::Span<const Val> vals,
                           absl::Span<const int> lens = {});
  // As PreparePush for a slice: `vals` are values [offset, offset +
  // vals.size()) of `key`'s `total` values. InvalidArgument for a slice
  // outside the key, or a key with a row of another width (kSum).
  absl::Status PreparePushSlice(Key key, size_t offset, size_t total,
                                absl::Span<const Val> vals);
  // Applies the prepared push. REQUIRES: the last Prepare* returned OK.
  void CommitPush();
  // Whether the prepared push is applied in one pass (see above).
  bool one_pass_prepared() const { return prepared_ && one_pass_; }
  // With `on` false, PreparePush always takes two passes (default true); to
  // compare the two in benchmarks and tests.
  void set_one_pass_push(bool on) { one_pass_enabled_ = on; }
  // PreparePush then CommitPush.
  absl::Status Push(absl::Span<const Key> keys, absl::Span<const Val> vals,
                    absl::Span<const int> lens = {});

  // The rows of `keys`, in that order: `keys` itself, the values and, when
  // not every key has as many values, `lens`. A single key with a row over
  // kMaxSlabRowBytes is answered with the stored array itself.
  // REQUIRES: no push prepared and not committed.
  KVPairs<Val> Pull(const SArray<Key>& keys);
  // Pulls of at least this many keys go over the pull pool, if any.
  static constexpr size_t kParallelPullKeys = 8192;
  // A parallel pull's chunks: of at least this many keys, at most this
  // many chunks (kv_store_pull.cc).
  static constexpr size_t kPullChunkKeys = 1024;
  static constexpr size_t kMaxPullChunks = 64;
  // Walks large pulls on `pool`'s threads (see above); null, the default,
  // walks every pull on the calling thread. Not owned; must outlive the
  // store or be replaced first.
  void set_pull_pool(ShardPool* pool) { pull_pool_ = pool; }

  Mode mode() const { return mode_; }
  // Keys with a row (at least one value).
  size_t num_keys() const { return num_rows_; }
  // The values of `key` (empty when it has no row); a test and debug aid.
  std::vector<Val> Get(Key key) const;
  // The rows of every key `keep` selects, in no particular order: keys,
  // values and lens (one per key). For a replacement server's copy
  // (kv_store_pull.cc). REQUIRES: no push prepared and not committed.
  KVPairs<Val> Export(const std::function<bool(Key)>& keep) const;
  // Bytes held by the index, slabs and large rows.
  size_t MemoryBytes() const;

 private:
  struct Pool;
  // A slot change made by the prepared push, undone if it fails.
  struct Undo {
    RowIndex::Slot* slot;
    uint32_t width;
    uint32_t row;
  };

  static bool IsLarge(uint32_t width) {
    return width > kMaxSlabRowBytes / sizeof(Val);
  }
  // A row kept in its index slot (see above).
  static constexpr bool kInlineOne = sizeof(Val) <= sizeof(uint32_t);
  static bool IsInline(uint32_t width) { return kInlineOne && width == 1; }
  // Rows kept in index slots: those in neither a pool nor large_rows_.
  size_t InlineRows() const;
  // `home` is index_.Home(key).
  absl::Status Resolve(Key key, size_t home, uint32_t width, bool zero_new,
                       uintptr_t* step);
  absl::Status ResolveOther(RowIndex::Slot* slot, uint32_t width, bool zero_new,
                            uintptr_t* step);
  // The pool of rows of `width` (created when missing), and the same for a
  // width known to have one; both cache the last pool used.
  Pool* PoolFor(uint32_t width);
  Pool* NewPoolFor(uint32_t width);
  const Pool* FindPool(uint32_t width) const;
  const Pool* FindOtherPool(uint32_t width) const;
  const Val* RowData(const RowIndex::Slot& slot) const;
  uintptr_t StepFor(RowIndex::Slot& slot, bool copy);
  // A new row of `width` values (zeros when `zero`); ResourceExhausted
  // when the pool has no row ids or memory left.
  absl::Status NewRow(uint32_t width, bool zero, uint32_t* row);
  void FreeRow(uint32_t width, uint32_t row);
  void Rollback();
  // PreparePush's one-pass path: true when it reserved all a push of `n`
  // keys of `width` values may need; false when the push must take two
  // passes (another width stored, or rows that could not be reserved).
  absl::StatusOr<bool> ReserveOnePass(size_t n, uint32_t width);
  absl::Status AddSlab(Pool* pool);
  // CommitPush's one-pass walk; kWidth 0: width_ values per key.
  template <size_t kWidth>
  void ApplyOnePass();
  // ApplyOnePass's step for a key's slot, found or inserted: its row (in
  // the slot with kInSlot, else in `pool`), made when the key has none of
  // `width` (ReserveOnePass reserved the room), with kCopyBit for a new
  // row and `hit_bits` for an existing one.
  template <bool kInSlot>
  uintptr_t StepOf(RowIndex::Slot* slot, uint32_t width, Pool* pool,
                   uintptr_t hit_bits);
  void ApplyLarge(uint32_t row, const Val* src, size_t len, bool copy);
  // The width of every row in use when all have one and are slab rows
  // (0 when there is none), else -1.
  int64_t OnlyWidth() const;
  // Pull's one walk over `keys`, all expected to have rows in `pool`
  // (kWidth: its width, or 0 for any), copied to out[i * width]: the index
  // bucket of key i + 2 * D and the row of key i + D are prefetched while
  // key i is copied. False, as soon as a key has no such row.
  // `pool` is null for rows kept in the index (IsInline).
  template <size_t kWidth>
  bool PullOnePass(absl::Span<const Key> keys, uint32_t width, const Pool* pool,
                   Val* out) const;
  // PullOnePass for rows of `width` (in `pool`, or in the index when it is
  // null), over the pull pool's threads when the pull is large enough.
  bool PullRows(absl::Span<const Key> keys, uint32_t width, const Pool* pool,
                Val* out) const;

  const Mode mode_;
  RowIndex index_;
  std::vector<std::unique_ptr<Pool>> pools_;
  absl::flat_hash_map<uint32_t, Pool*> pool_of_width_;
  mutable const Pool* last_pool_ = nullptr;  // PoolFor's one-entry cache
  std::vector<SArray<Val>> large_rows_;
  std::vector<uint32_t> free_large_rows_;
  size_t num_rows_ = 0;
  ShardPool* pull_pool_ = nullptr;

  // The prepared push: one step per key (a tagged row pointer or large row
  // id, see kv_store.cc), the slot changes, and what CommitPush reads.
  bool prepared_ = false;
  bool one_pass_enabled_ = true;
  bool one_pass_ = false;       // the prepared push takes one pass
  absl::Span<const Key> keys_;  // its keys (one pass only)
  std::vector<uintptr_t> steps_;
  std::vector<Undo> undo_;
  absl::Span<const Val> vals_;
  absl::Span<const int> lens_;
  size_t width_ = 0;         // values per key when lens_ is empty
  size_t slice_offset_ = 0;  // a slice's first value
  // Pull scratch: each key's row and length.
  struct PulledRow {
    const Val* data;
    size_t len;
  };
  std::vector<PulledRow> pulled_;
};

}  // namespace petrel

#endif  // PETREL_STORE_KV_STORE_H_

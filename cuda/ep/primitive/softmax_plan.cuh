// Planning and launching the CUDA softmax family (softmax_kernels.cuh gives the overview):
// PlanSoftmax picks a path and its configuration from the row length, the dtype and the
// device; Launch runs the plan and Describe prints it. The host-side caches it reads are in
// softmax_plan.cu. Also the primitive itself (SoftmaxImpl) and its per-dtype factories.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

#include "ep/cuda_stream.h"
#include "ep/primitive/softmax_block.cuh"
#include "ep/primitive/softmax_block_registers.cuh"
#include "ep/primitive/softmax_common.cuh"
#include "ep/primitive/softmax_warp.cuh"
#include "ep/primitive/softmax_warp_tile.cuh"
#include "oneflite/ep/primitive/softmax.h"

namespace oneflite::ep::primitive::cuda_softmax {

// How many blocks of `kernel` fit on one SM of the current device (info describes it) with
// `dynamic_smem` bytes of dynamic shared memory. Cached per (kernel, device, block, smem): the
// runtime's occupancy calculator costs microseconds, and one launch may ask it several times.
int MaxActiveBlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size,
                         size_t dynamic_smem);
// The most dynamic shared memory one block of `kernel` may use on the current device: the
// opt-in limit less the kernel's static shared memory. The first call for a (kernel, device)
// raises the kernel's dynamic limit to that (the default stops at 48 KiB), so the occupancy
// answers and the launches that follow may use all of it.
size_t MaxDynamicSmem(const void* kernel, const CudaDeviceInfo& info);
// The dynamic shared memory that holds `kernel` to `blocks` blocks of `block_size` threads an
// SM where more would fit, without taking L1 from it: the first call for a (kernel, device)
// prefers a carve-out of kHoldCarveoutBytes for the kernel (the driver otherwise sizes shared
// memory for the most blocks) and the blocks are given enough dynamic shared memory that
// `blocks` fit in it and one more does not. 0 where the occupancy calculator does not then
// answer `blocks` (the preference set back). Launches of the kernel with less shared memory
// keep the smaller carve-out: the blocks they have fit in it.
size_t HoldBlocksPerSmSmem(const void* kernel, const CudaDeviceInfo& info, int block_size,
                           int blocks);
// The carve-out HoldBlocksPerSmSmem prefers: one every architecture since sm_80 offers, small
// enough that L1 keeps nearly all of the SM's 256 KiB (a shared-memory limit of 3 blocks a
// 228 KiB carve-out would take, and L1 with it, measured 1.4% slower). The driver takes a
// preference as a hint: a probe that counted the blocks an SM ran at once (H200) found it kept
// for these 512-thread blocks (3 an SM, as the occupancy calculator answers) but not for
// 128-thread blocks with 1248 bytes (14 an SM where the calculator answered 7).
constexpr int kHoldCarveoutBytes = 16 * 1024;
// How many blocks of `block_size` threads, with no dynamic shared memory, fit on an SM once
// `kernel` prefers `carveout`, which the first call for a (kernel, device) sets. Each kernel is
// asked for one carve-out only: the block_registers kernel has a copy for each
// (softmax_block_registers.cuh, Carveout).
//  * cudaSharedmemCarveoutMaxL1, the smallest: each block still needs its static shared memory
//    and the 1 KiB the driver reserves for it (sm_80 on), so on an H200's 8 KiB carve-out
//    128-thread blocks of the block_registers kernel fit 7 an SM; the probe above counted 7 at
//    once, and 16 with the default carve-out.
//  * cudaSharedmemCarveoutMaxShared, the largest: the SM's L1 keeps only what shared memory does
//    not take (28 KiB of an H100's 256).
int CarveoutBlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size,
                        cudaSharedCarveout carveout);
// The PTX architecture `kernel` was compiled from for the current device (info describes it),
// as cudaFuncAttributes::ptxVersion gives it (90 for sm_90); cached per (kernel, device).
int KernelPtxVersion(const void* kernel, const CudaDeviceInfo& info);
// The facts launches are planned from, for the current device: what Describe plans with,
// where Launch has its stream's copy.
const CudaDeviceInfo& CurrentDeviceInfo();

enum class Path { kWarp, kBlockSmem, kBlockOnline, kBlockRegisters, kWarpTile };

struct Plan;
using LaunchFn = void (*)(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols,
                          const void* x, void* y);

// Everything Launch decides, and the typed function that launches it.
struct Plan {
  Path path = Path::kBlockOnline;
  int pack = 1;
  // Warp path.
  int width = 0;
  int cols_per_thread = 0;
  int rows_per_access = 0;
  bool ragged = false;  // rows may have edge columns (WarpSoftmaxKernel, block_registers)
  // warp_tile path (and width, cols_per_thread as for the warp path; a tile is 32 / width rows).
  int tiles_per_warp = 0;
  // All paths.
  int block = 0;
  // Block paths.
  int cached_packs = 0;
  // Dynamic shared memory: the block paths' cache, warp_tile's tiles, or memory a kernel does not
  // use that holds its blocks an SM (HoldBlocksPerSmSmem; tools/softmax_lab.cu's occ= and wocc=).
  size_t smem = 0;
  // The grid: one block per tile of rows (`tiles`), or, when `persistent`, only the blocks that
  // fit on the device at once (`active_per_sm` on each SM), each striding over the tiles.
  int64_t tiles = 0;
  int active_per_sm = 0;
  bool persistent = false;
  int grid = 0;
  Stagger stagger;  // block paths (see StaggerStart)
  // block_registers: blocks an SM held below what registers allow, by `smem` of shared memory
  // the kernel does not use (HoldBlocksPerSmSmem) or, when `max_l1`, by the smallest carve-out
  // (CarveoutBlocksPerSm); 0 when not held.
  int held_per_sm = 0;
  bool max_l1 = false;
  // block_registers: the launch runs the kernel's copy that prefers the largest shared-memory
  // carve-out (PreferMaxShared) where x and y start on 128-byte lines (LineAligned), the default
  // copy elsewhere.
  bool max_shared = false;
  // block_registers' 128 x 1 on rows of exactly 128 whole packs: the kernel whose row comes in
  // by one bulk copy (BulkLoadSoftmaxKernel, sm_90 on).
  bool bulk_load = false;
  // block_registers on rows that fill its shape exactly: the kernel of a block a row with no row
  // loop and no test of the row's end (kOneRow; kFloatOneRowShapes says where); the warp path on
  // rows that fill a 32- or 16-lane rung: its kernel of a group a row (kWarpOneRowRules).
  bool one_row = false;
  // block_registers, the warp path and block_smem: the launch runs the kernel's copy that asks
  // L2 for x's bytes ahead of its own (ReadAhead; ReadsAheadPlanned, kWarpReadAheadShape and
  // PlanBlockSmemReadAhead say where; block_smem's only where x starts on a 128-byte line).
  bool read_ahead = false;
  LaunchFn launch = nullptr;
};

std::string ToString(const Plan& plan);

// y may sit at another offset from a 16-byte boundary than x (say x is a view with a storage
// offset and y is fresh): then stores go element by element.
template <int kBytes = kPackBytes>
inline bool SameAlignment(const void* x, const void* y) {
  return ((reinterpret_cast<uintptr_t>(x) ^ reinterpret_cast<uintptr_t>(y)) % kBytes) == 0;
}

// A cache line's bytes: L1 and L2 keep global memory in lines of 128 bytes.
constexpr int kLineBytes = 128;
inline bool LineAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kLineBytes == 0; }
inline bool IsPackAligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kPackBytes == 0;
}

// The block_registers shapes whose rows measured faster with the least L1 (PreferMaxShared):
// float 128 x 2, 128 x 4, 256 x 2 and 512 x 2, 16-bit 128 x 3, 128 x 4 and 256 x 2. Only these
// get a kMaxShared copy of their kernels.
template <typename T, int kBlock, int kPacks>
constexpr bool kMaxSharedShape =
    std::is_same_v<T, float> ? (kBlock == 128 && (kPacks == 2 || kPacks == 4)) ||
                                   (kBlock == 256 && kPacks == 2) || (kBlock == 512 && kPacks == 2)
                             : kIs16Bit<T> && ((kBlock == 128 && (kPacks == 3 || kPacks == 4)) ||
                                               (kBlock == 256 && kPacks == 2));

// The fewest packs of a row (window) for which a kMaxSharedShape takes the copy: float 512 x 2
// only rows that fill more than 3/4 of its 1024 packs, since the rows that fill less lost with
// it on an H100 (NOTES.md item 80: 2816 columns, 704 packs, 1.011 -> 1.001 of copy; 3072, 768
// packs, 1.003 -> 1.003 and log_softmax 1.003 -> 1.000) where 832 packs and more gained (3328
// 1.010 -> 1.013, 3584 1.010 -> 1.013, 3840 1.000 -> 1.003, 4096 1.008 -> 1.012). The other
// shapes take it for every row they run.
template <typename T, int kBlock, int kPacks>
constexpr int64_t kMaxSharedLeastWindow =
    std::is_same_v<T, float> && kBlock == 512 && kPacks == 2 ? int64_t{kBlock} * kPacks * 3 / 4 + 1
                                                             : 0;

// ---- Reading x ahead into L2 (ReadAhead) ----------------------------------------------------

// Whether a launch reads ahead: the planner's rule (kPlanned), or, for tools/softmax_lab.cu's
// comparisons, off or on wherever the shape has a copy of its kernel that does.
enum class ReadAheadChoice { kPlanned, kOff, kOn };

// The device can read ahead and the build compiled `kernel`, a copy that does, for it: bulk
// prefetches (sm_90 on), a DRAM wide for its SMs (NarrowDram; on a narrow one no read-ahead was
// measured), and an L2 of ten times kReadAheadBytes or more, so that the distance stays well
// short of where lines are evicted before use (on an H200's 60 MiB: 8-12 MiB). Defined with the
// block_registers rules, whose DRAM test it shares.
inline bool ReadAheadRunsOn(const void* kernel, const CudaDeviceInfo& info);
constexpr int64_t kReadAheadL2Multiple = 10;

// The warp rungs that read ahead where ReadAheadRunsOn: the 16-bit types' 32 lanes of 6 and 8
// packs, the ladder's longest rows, for rows of whole packs, from kWarpReadAheadLeastPacks packs
// (PlanPath; 1280-2048 columns). Thread 0 asks for its block's four rows. Measured on an H200
// (tools/softmax_lab.cu, the plan against ahead=off, 98304 rows, two rounds; half softmax,
// fractions of copy): 1280 columns 0.981-0.982 -> 0.989-0.990, 1288 0.969-0.970 -> 0.972-0.973,
// 1536 0.984-0.986 -> 0.997-0.998, 1800 0.983-0.984 -> 0.987-0.988, 2048 0.982-0.983 ->
// 1.002-1.003; shorter rows on 32 x 6 level or behind (1152 0.991 -> 0.990, 1032 0.981 ->
// 0.970), and so were rows with edge columns (1281 0.966-0.967 -> 0.964, 2047 0.988-0.989 ->
// 0.987-0.988). (NOTES.md, item 98.)
constexpr int64_t kWarpReadAheadLeastPacks = 160;
template <typename T, typename Shape, bool kRagged>
constexpr bool kWarpReadAheadShape =
    kIs16Bit<T> && !kRagged && Shape::width == kWarpSize &&
    (Shape::packs == 6 || Shape::packs == 8) && Shape::bytes == kPackBytes && Shape::rows == 0;

// The block_registers shapes with a copy of their kernel that reads ahead: float's of fewer than
// 1024 threads that hold rows of kReadAheadLeastPacks window packs or more (2048 columns).
// ReadsAheadPlanned says which rows take it. The 16-bit types' shapes gained at one length of four
// (tools/softmax_lab.cu with 16-bit copies, the plan against ahead=on, two rounds, half softmax,
// fractions of copy: 4096 columns 0.976 -> 0.981, 6144 0.981-0.982 -> 0.982-0.983, 5000 1.000 ->
// 0.996-0.997, 8192 0.976-0.977 -> 0.974), so they have none. (NOTES.md, item 98.)
// tools/softmax_lab.cu builds a copy for every float shape below 1024 threads, so that ahead=on
// measures the rows the rule leaves out.
constexpr int64_t kReadAheadLeastPacks = 512;
#ifdef ONEFLITE_SOFTMAX_LAB
constexpr int64_t kReadAheadCopyLeastPacks = 0;
#else
constexpr int64_t kReadAheadCopyLeastPacks = kReadAheadLeastPacks;
#endif
template <typename T, int kBlock, int kPacks>
constexpr bool kReadAheadShape = std::is_same_v<T, float> && kBlock < 1024 &&
                                 int64_t{kBlock} * kPacks >= kReadAheadCopyLeastPacks;

// block_smem's launches that read ahead where ReadAheadRunsOn: 16-bit softmax rows on
// kBlockSmemReadAheadBlock threads of up to kBlockSmemReadAheadMostPacks packs (half rows of
// 29697-37632 columns, bfloat16 36865-37632: PlanCachedTail's 256 x 2 takes the shorter ones)
// whose rows are whole 128-byte lines (PlanBlockSmemReadAhead), when x starts on a line
// (LaunchBlock runs the plain copy otherwise). Thread 0 asks before its row's copies. Measured
// on an H200 (tools/softmax_lab.cu, the plan against ahead=on, benchmark rows, two rounds; the
// kernel's 47 registers hold it to 2 blocks an SM; softmax, fractions of copy): half 30720
// columns 0.917 -> 0.930, 31744 0.929-0.931 -> 0.935-0.938, 32768 0.940-0.942 -> 0.947-0.953,
// 35840 0.935 -> 0.939, 36864 0.938 -> 0.945, 37632 0.964-0.965 -> 0.967; bfloat16 37120
// 0.923-0.924 -> 0.937-0.938, 37376 0.923-0.927 -> 0.937-0.943, 37632 0.925-0.928 ->
// 0.939-0.940. Rows that are not whole lines lost (half 29704 0.882-0.886 -> 0.860-0.863, 30000
// 0.912-0.914 -> 0.896-0.899, 34000 -0.9%, 36000 -0.5-0.7%, 33001 -1.0-1.2%; bfloat16 37000
// 0.886-0.889 -> 0.869-0.873), and so did longer rows of whole lines, or they were level (half
// 40960 -0.2-0.5%, 49152 -0.3-0.5%, 57344 +0.5%; bfloat16 40960 and 57344 level, 49152 -0.9%).
// log_softmax, whose output pass has no exp, gained 0.2-0.4% (half 30720 and 36864) and keeps
// the plain copy. (NOTES.md, item 100.)
constexpr int kBlockSmemReadAheadBlock = 512;
constexpr int64_t kBlockSmemReadAheadMostPacks = 4704;
template <typename T, Algorithm kAlgorithm>
constexpr bool kBlockSmemReadAheadCopy = kIs16Bit<T> && kAlgorithm == Algorithm::kSoftmax;

// A one-row plan's launch (kOneRow, in the warp path and block_registers): the planner gives it
// only to rows that fill its shape, `shape_cols` columns, from a 16-byte boundary; a launch on
// other rows would need another shape.
inline void CheckOneRowLaunch(const void* x, int64_t cols, int64_t shape_cols) {
  ONEFLITE_CHECK(IsPackAligned(x) && cols == shape_cols, RuntimeError,
                 "softmax: a one-row plan for ", shape_cols, " columns launched on rows of ", cols,
                 " columns");
}

template <typename T, Algorithm kAlgorithm, typename Shape, bool kRagged, bool kReadAhead = false,
          bool kOneRow = false>
void LaunchWarp(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                void* y) {
  if constexpr (kOneRow) {
    CheckOneRowLaunch(x, cols, int64_t{Shape::width} * Shape::packs * PackSize<T>::value);
    // y's packs would straddle 16-byte boundaries, or the grid does not reach every row: the
    // rung's kernel with its row loop and store fallback.
    constexpr int64_t kRowsPerBlock = kWarpBlockSize / Shape::width;
    if (!SameAlignment<Shape::bytes>(x, y) || int64_t{plan.grid} * kRowsPerBlock < rows) {
      LaunchWarp<T, kAlgorithm, Shape, false>(plan, stream, rows, cols, x, y);
      return;
    }
  }
  WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs, kRagged, Shape::bytes, Shape::rows,
                    kReadAhead, kOneRow><<<plan.grid, kWarpBlockSize, plan.smem, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), rows, static_cast<int>(cols),
      SameAlignment<Shape::bytes>(x, y));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, typename Shape>
void LaunchTile(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                void* y) {
  TileSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::words, Shape::tiles, Shape::min_blocks>
      <<<plan.grid, kTileBlockSize, plan.smem, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), rows, static_cast<int>(cols));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

// The copy that reads ahead (kReadAhead) runs where x starts on a 128-byte line, so that with
// rows of whole lines (PlanBlockSmemReadAhead) every row does; elsewhere the plain copy runs.
template <typename T, Algorithm kAlgorithm, int kBlock, bool kAsyncCopy = true,
          bool kOnlineNormalizer = true, typename Cache = T, int kHeld = 0, bool kReadAhead = false>
void LaunchBlock(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                 void* y) {
  if constexpr (kReadAhead) {
    if (!LineAligned(x)) {
      LaunchBlock<T, kAlgorithm, kBlock, kAsyncCopy, kOnlineNormalizer, Cache, kHeld>(
          plan, stream, rows, cols, x, y);
      return;
    }
  }
  BlockSoftmaxKernel<T, kAlgorithm, kBlock, kAsyncCopy, kOnlineNormalizer, Cache, kHeld, kReadAhead>
      <<<plan.grid, kBlock, plan.smem, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), rows,
                                                 cols, plan.cached_packs, SameAlignment(x, y),
                                                 plan.stagger);
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, int kBlock, int kPacks, bool kCachedTail = false,
          bool kRagged = true, StoreFallback kFallback = StoreFallback::kElements,
          Carveout kCarveout = Carveout::kDefault, bool kReadAhead = false, bool kOneRow = false>
void LaunchBlockRegisters(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols,
                          const void* x, void* y) {
  if constexpr (kOneRow) {
    CheckOneRowLaunch(x, cols, int64_t{kBlock} * kPacks * PackSize<T>::value);
  }
  if constexpr (kFallback == StoreFallback::kNone) {
    // y's packs would straddle 16-byte boundaries (or, for kOneRow, the grid is not the rows):
    // the ragged kernel, which holds the same rows from x's boundary.
    if (!SameAlignment(x, y) || (kOneRow && rows != plan.grid)) {
      LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, true, StoreFallback::kElements,
                           Carveout::kDefault, kReadAhead>(plan, stream, rows, cols, x, y);
      return;
    }
  }
  if constexpr (kCarveout == Carveout::kDefault && !kCachedTail && !kReadAhead && !kOneRow &&
                kMaxSharedShape<T, kBlock, kPacks>) {
    if (plan.max_shared && LineAligned(x) && LineAligned(y)) {
      LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, kRagged, kFallback,
                           Carveout::kMaxShared>(plan, stream, rows, cols, x, y);
      return;
    }
  }
  BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, kCachedTail, kRagged, kFallback,
                             kCarveout, kReadAhead, kOneRow>
      <<<plan.grid, kBlock, plan.smem, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), rows,
                                                 static_cast<int>(cols), SameAlignment(x, y),
                                                 plan.cached_packs / kBlock, plan.stagger);
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

// block_registers' kBlock x 1 with the row brought in by the bulk copy engine, a block a row,
// for rows of exactly kBlock whole packs. A bulk copy needs 16-byte boundaries and the grid a
// block a row, which the planner made sure of; a caller launching the plan on other pointers or
// rows gets the ragged kernel.
template <typename T, Algorithm kAlgorithm, int kBlock>
void LaunchBulkLoad(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols,
                    const void* x, void* y) {
  if (!IsPackAligned(x) || !IsPackAligned(y) || cols != int64_t{kBlock} * PackSize<T>::value ||
      rows != plan.grid) {
    LaunchBlockRegisters<T, kAlgorithm, kBlock, 1>(plan, stream, rows, cols, x, y);
    return;
  }
  BulkLoadSoftmaxKernel<T, kAlgorithm, kBlock>
      <<<plan.grid, kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

// The longest 16-bit row, in whole packs, that the warp ladder gives 8 lanes of 4 packs (four rows
// a warp, one a group of 8) rather than 16 x 2 (two rows a group of 16, 2 packs of each a lane):
// k16BitWarp16x4MostPacks' trade one rung down. A warp's four rows take 6 shuffles a lane for their
// max and sum (3 butterfly steps), where 16 x 2 takes 16 for the same four rows (4 steps, two rows
// a group). Measured on an H200 (tools/softmax_lab.cu, warp=8x4 against the plan, 98304 rows, two
// rounds; fractions of copy, softmax, half / bfloat16, log_softmax alike or more): 137 columns
// +3.1% / +1.6%, 141 +6.7% / +3.7%, 150 +6.7% / +4.9%, 153 +2.2% / +1.3%, 160 (20 whole packs)
// 0.937 -> 0.951 / 0.88 -> 0.915, 161 +1.2% / +1.1%, 166 +2.4% / +3.3%. Past 20 packs it was mixed:
// at 21-22 packs rows of 8k + 1 columns ran -1.0% to +1.2% (169, 177) while the others gained up to
// 4.5%, and at 23-24 packs only whole packs and 8k + 4 gained (0.3-3.2%), the others level or up to
// 1.9% behind; so longer rows keep 16 x 2. float keeps 16 x 2 too (0.1-9% behind on 8 x 4 at 68-128
// columns), and so does double (not measured). (NOTES.md, item 95.)
constexpr int k16BitWarp8x4MostPacks = 20;

// The longest 16-bit row, in whole packs, that the warp ladder gives 16 lanes of 4 packs (two
// rows a warp, one a group of 16) rather than 32 x 2 (two rows a group of 32, 2 packs of each a
// lane). Both hold 4 packs a lane; 16 x 4 reduces each row over 4 butterfly steps, 8 shuffles for
// the max and the sum of two rows, where 32 x 2 takes 20 for the same two rows over 5 steps. On
// rows that fill its lanes up to three quarters (33-48 packs, 264-384 columns) that is much of a
// row's work. Measured on an H200 (tools/softmax_lab.cu, warp=16x4 against the plan, 98304 rows,
// two rounds; fractions of copy, softmax / log_softmax): half 264 columns 0.81 -> 0.88 / 0.80 ->
// 0.87, 288 0.86 -> 0.93 / 0.86 -> 0.92, 300 (ragged) 0.82 -> 0.90 / 0.79 -> 0.90, 320 0.92 ->
// 0.97 / 0.91 -> 0.96, 352 0.935 -> 0.965 / 0.93 -> 0.97, 384 0.975 -> 0.99 / 0.97 -> 0.99;
// bfloat16 264 0.78 -> 0.85, 300 0.79 -> 0.88 / 0.78 -> 0.87, 320 0.89 -> 0.95 / 0.89 -> 0.94,
// 384 0.94 -> 0.98 / 0.96 -> 0.99; rows off a 16-byte boundary (half 265-385) +3-9%, and 8448
// rows (64 an SM) +2-3.5%. Past 48 packs it was mixed (half 0.4-1.2% behind at 392-416,
// bfloat16 0.7% behind to 1.1% ahead) and from 56 packs, where 32 x 2 takes one row a group, level
// to 1.8% behind. float keeps 32 x 2 (16 x 4 was ahead at two lengths of 33-64 packs, behind at
// six) and so does double (not measured). (NOTES.md, item 94.)
constexpr int k16BitWarp16x4MostPacks = 48;

// The longest 16-bit row with edge columns, in whole packs, that 16 x 4 takes: past
// k16BitWarp16x4MostPacks, where rows of whole packs were mixed, rows with edge columns still run
// faster on it than on 32 x 2 (the likely reason, not measured: 32 x 2's lanes fetch the edge
// columns of both of a group's rows). Measured on an H200 (tools/softmax_lab.cu, warp=16x4 against
// the plan, 98304 rows; fractions of copy, softmax / log_softmax, half then bfloat16): rows of
// 49-51 packs at every residue of the columns mod 8 but 0, 393 columns 0.931 -> 0.950 / 0.896 ->
// 0.949, 0.911 -> 0.948 / 0.905 -> 0.947, 398 +1.3% / +4.9%, +2.6% / +3.2%, 401 +1.2% / +4.1%,
// +2.7% / +3.0%, 406 +1.1% / +4.1%, +2.6% / +2.8%, 410 +1.2% / +4.1%, +2.4% / +2.8%, 415 0.938 ->
// 0.940 / 0.916 -> 0.945, 0.929 -> 0.946 / 0.923 -> 0.948 (item 94's round: 401 +1-4.6%, 410
// +1-3.8%); 52-53 packs level to 2.7% ahead (417: half softmax level), 54-55 from 0.5% behind
// to 1.5% ahead. (NOTES.md, item 96.)
constexpr int k16BitWarp16x4RaggedMostPacks = 51;

// The warp ladder, shortest rows first. Rungs below 32 lanes hold one pack per lane, except float's
// 8 x 2, which takes rows of 9-16 packs (33-64 columns) in place of 16 x 1, and 16 x 2, which takes
// rows of 17-32 packs in place of 32 x 1 for every dtype but double (kWarpShapeFor), and the 16-bit
// types' 8 x 4 and 16 x 4 for rows of 17-20 and 33-48 packs, 33-51 with edge columns
// (k16BitWarp8x4MostPacks, k16BitWarp16x4MostPacks, k16BitWarp16x4RaggedMostPacks); with 32 lanes
// the packs per lane grow in steps that keep the padding small. A dtype uses the rungs that keep
// its row within 64 registers a lane (half: 2048 cols), 96 for bfloat16 (3072 cols; 138 registers
// in all, no spills), 24 for float (768 cols: longer float rows fill a block_registers shape,
// kFloatShapes), or 16 for double (256 cols), whose exp needs many registers of its own
// (kWarpLaneBytes).
template <typename Fn>
void ForEachWarpShape(Fn&& fn) {
  fn(WarpShape<1, 1>{});
  fn(WarpShape<2, 1>{});
  fn(WarpShape<4, 1>{});
  fn(WarpShape<8, 1>{});
  fn(WarpShape<8, 2>{});
  fn(WarpShape<16, 1>{});
  fn(WarpShape<8, 4, kPackBytes, 0, k16BitWarp8x4MostPacks>{});
  fn(WarpShape<16, 2>{});
  fn(WarpShape<32, 1>{});
  fn(WarpShape<16, 4, kPackBytes, 0, k16BitWarp16x4MostPacks, k16BitWarp16x4RaggedMostPacks>{});
  // 32 x 2 twice: two rows a group (kWarpRows) for rows of up to 55 packs, one row for rows
  // that fill 7/8 of the rung or more. One row measured (tools/softmax_lab.cu, rows=1, H200;
  // softmax / log_softmax, fractions of copy): float 256 columns 0.965 -> 0.986 / 0.970 ->
  // 0.983, half 512 0.968 -> 0.988 / 0.965 -> 0.985, half 448 +0.5%, float 192-240 level; and
  // behind on rows that fill less: float 160 0.986 -> 0.967 / 0.983 -> 0.930, 176 0.984 ->
  // 0.979 / 0.983 -> 0.947, half 384 0.969 -> 0.961.
  fn(WarpShape<32, 2, kPackBytes, 0, 55>{});
  fn(WarpShape<32, 2, kPackBytes, 1>{});
  fn(WarpShape<32, 3>{});
  fn(WarpShape<32, 4>{});
  fn(WarpShape<32, 6>{});
  fn(WarpShape<32, 8>{});
  fn(WarpShape<32, 12>{});
  fn(WarpShape<32, 16>{});
}

// The bytes of compute values a lane may hold (see ForEachWarpShape). bfloat16 goes up to the
// 32 x 12 rung (3072 cols), half stops at 32 x 8 (2048): at 3072 cols the rung measured 0.98x
// copy for bfloat16 but 0.90x for half, which reaches 0.93-0.98x on block_smem's 64 threads
// there (bfloat16 0.91x; H200, tools/softmax_lab.cu). Why half loses on that rung is not
// understood. float stops at 32 x 6 (768 cols): block_registers takes every float row of 192-1024
// window packs (kFloatShapes), so a longer rung would never be climbed; of those it climbed
// before, 32 x 12 ran log_softmax at 0.92-0.93x copy (NOTES.md, item 69).
template <typename T>
constexpr int kWarpLaneBytes = std::is_same_v<T, double>          ? 64
                               : std::is_same_v<T, float>         ? 96
                               : std::is_same_v<T, __nv_bfloat16> ? 384
                                                                  : 256;

template <typename T, typename Shape>
constexpr bool kWarpShapeFits =
    Shape::packs * PackSize<T>::value * sizeof(ComputeType<T>) <= kWarpLaneBytes<T>;

// The rungs each dtype skips, of two that hold the same packs. 16 packs: float takes 8 x 2 and
// not 16 x 1, the others the reverse. Measured on an H200 (tools/softmax_lab.cu, warp=8x2
// against 16 x 1): float 64 columns 0.95 -> 0.97-0.98x copy, 40 columns 0.90 -> 0.92-0.93
// (log_softmax 0.84 -> 0.92-0.93), 48 level to +2%: a quarter of the warp a row, so fewer
// shuffles and twice the values a lane per row's overhead. Half measured level there (100
// columns, 0.87 against 0.86), so the 16-bit types keep 16 x 1. 32 packs: float and the 16-bit
// types take 16 x 2 and not 32 x 1, for the same reasons (warp=16x2 against 32 x 1, softmax /
// log_softmax): float 80 columns 0.86 -> 0.94 / 0.78-0.82 -> 0.945, 96 0.95 -> 0.987 /
// 0.88-0.92 -> 0.98, 112 0.97 -> 0.98, 128 0.993 -> 1.000 / 0.987 -> 1.001; half 160 0.79 ->
// 0.935 / 0.785 -> 0.91, 192 0.90 -> 0.98 / 0.895 -> 0.97, 256 0.98 -> 0.99; bfloat16 160
// 0.77 -> 0.905 / 0.76 -> 0.89, 224 0.92 -> 0.98 / 0.915 -> 0.97, 256 0.98 -> 0.995; ragged
// rows (float 127, half 250) +0.5-2%. double, not measured, keeps 32 x 1.
template <typename Shape, int kWidth, int kPacks>
constexpr bool kIsRung = Shape::width == kWidth && Shape::packs == kPacks;

// 8 x 4 below 16 x 2 and 16 x 4 below 32 x 2: only the 16-bit types take them
// (k16BitWarp8x4MostPacks, k16BitWarp16x4MostPacks). Each dtype's rungs are spelled out:
// docs/_ext/sourcetables.py reads them from here for the ladder's table.
template <typename T, typename Shape>
constexpr bool kWarpShapeSkipped =
    std::is_same_v<T, float> ? kIsRung<Shape, 16, 1> || kIsRung<Shape, 32, 1> ||
                                   kIsRung<Shape, 8, 4> || kIsRung<Shape, 16, 4>
    : std::is_same_v<T, double> ? kIsRung<Shape, 8, 2> || kIsRung<Shape, 16, 2> ||
                                      kIsRung<Shape, 8, 4> || kIsRung<Shape, 16, 4>
                                : kIsRung<Shape, 8, 2> || kIsRung<Shape, 32, 1>;

// Whether dtype T climbs rung Shape.
template <typename T, typename Shape>
constexpr bool kWarpShapeFor = kWarpShapeFits<T, Shape> && !kWarpShapeSkipped<T, Shape>;

template <typename T>
int64_t MaxWarpPacks() {
  int64_t most = 0;
  ForEachWarpShape([&](auto shape) {
    using Shape = decltype(shape);
    if constexpr (kWarpShapeFor<T, Shape>) {
      most = std::max<int64_t>(most, Shape::width * Shape::packs);
    }
  });
  return most;
}

// Calls fn(std::integral_constant<int, B>{}) for the block sizes of the block paths.
template <typename T, typename Fn>
void ForEachBlockSize(Fn&& fn) {
  fn(std::integral_constant<int, 128>{});
  fn(std::integral_constant<int, 256>{});
  fn(std::integral_constant<int, 512>{});
  if constexpr (kMaxBlockSize<T> >= 1024) { fn(std::integral_constant<int, 1024>{}); }
}

// The blocks resident on the device at once, `active_per_sm` on each SM (at least one): a wave.
inline int64_t ResidentBlocks(const CudaDeviceInfo& info, int active_per_sm) {
  return static_cast<int64_t>(info.sm_count) * std::max(active_per_sm, 1);
}

// The most blocks a grid's x dimension takes.
constexpr int64_t kMaxGridBlocks = 0x7fffffff;

// Sets the plan's grid over `tiles` tiles of rows. Both kernels stride over the tiles, so any
// grid is correct; what differs is speed. One block per tile, scheduled by the hardware as
// blocks retire, measured faster than a persistent grid of only the resident blocks on every
// path where two or more blocks fit on an SM: 5-13% for float, and up to 15% for the 16-bit
// types on an H200 (NOTES.md, "Second round"), and on par where one block fills an SM. A grid
// of more than 2^31 - 1 blocks is capped; the stride covers the rest.
inline void SetGrid(Plan& plan, int64_t tiles, const CudaDeviceInfo& info, int active_per_sm,
                    bool persistent) {
  plan.tiles = tiles;
  plan.active_per_sm = active_per_sm;
  plan.persistent = persistent;
  const int64_t resident = ResidentBlocks(info, active_per_sm);
  const int64_t grid = persistent ? std::min(tiles, resident) : tiles;
  plan.grid = static_cast<int>(std::min<int64_t>(grid, kMaxGridBlocks));
}

// Sets the plan's stagger (StaggerStart) for a block path with rows of at least
// kStaggerMinRowBytes: the first wave's blocks, those resident at the launch, start in
// kStaggerGroups groups a step apart, the step the time a row's bytes (up to
// kStaggerMaxStepBytes) take at 128 KiB a microsecond at the SM's peak clock. Measured on an
// H200 (tools/softmax_lab.cu, stagger=off against this rule; fractions of copy, softmax /
// log_softmax): float 65536 columns (block_online, one block an SM, 2048 rows) 0.922 -> 0.956 /
// 0.932 -> 0.962, float 81920 0.896 -> 0.922, 40001 0.872 -> 0.897, 32768 0.968 -> 0.978, 12345
// 0.972 -> 0.979; half 65536 0.93 -> 0.941, bfloat16 0.923 -> 0.941, bfloat16 32768 0.898 ->
// 0.906; nothing slower. With the step fixed by hand (stagger=U): float 65536 on 132 rows (one
// wave) level, on 264-1024 rows +5-10%; groups of 4 ahead of 2, 8 or 16 with the same spread.
// Rows of 32 KiB (half 16384, several blocks an SM, out of step by themselves) lost 0.4-1% with
// steps of 1-2 us (NOTES.md, item 47).
constexpr int64_t kStaggerMinRowBytes = 48 * 1024;
constexpr int64_t kStaggerMaxStepBytes = 512 * 1024;
constexpr int64_t kStaggerBytesPerMs = int64_t{128} * 1024 * 1000;

// Whether the plan's kernel takes a Stagger (BlockSoftmaxKernel, BlockRegisterSoftmaxKernel).
inline bool IsBlockPath(Path path) {
  return path == Path::kBlockSmem || path == Path::kBlockOnline || path == Path::kBlockRegisters;
}

// The plan's first wave: the blocks resident at its launch.
inline int FirstWaveBlocks(const CudaDeviceInfo& info, const Plan& plan) {
  return static_cast<int>(std::min<int64_t>(plan.grid, ResidentBlocks(info, plan.active_per_sm)));
}

template <typename T>
void StaggerFirstWave(const CudaDeviceInfo& info, int64_t cols, Plan& plan) {
  plan.stagger = Stagger{};
  const int64_t row_bytes = cols * static_cast<int64_t>(sizeof(T));
  if (!IsBlockPath(plan.path) || row_bytes < kStaggerMinRowBytes) { return; }
  const int64_t step_bytes = std::min(row_bytes, kStaggerMaxStepBytes);
  plan.stagger.blocks = FirstWaveBlocks(info, plan);
  plan.stagger.cycles = static_cast<int>(step_bytes * info.clock_khz / kStaggerBytesPerMs);
}

// Fills `plan` for the warp rung Shape, compiled for rows with edge columns where kRagged; on
// the kernel's copy that reads ahead where `ahead` says so (kPlanned: kWarpReadAheadShape).
template <typename T, Algorithm kAlgorithm, typename Shape, bool kRagged>
void PlanWarpRung(const CudaDeviceInfo& info, int64_t rows, Plan& plan, ReadAheadChoice ahead) {
  constexpr int P = PackSize<T, Shape::bytes>::value;
  constexpr int kRows =
      kGroupRows<T, Shape::width, Shape::packs, kRagged, Shape::bytes, Shape::rows>;
  auto fill = [&](auto ahead_tag) {
    constexpr bool kAhead = decltype(ahead_tag)::value;
    plan.path = Path::kWarp;
    plan.pack = P;
    plan.width = Shape::width;
    plan.cols_per_thread = Shape::packs * P;
    plan.rows_per_access = kRows;
    plan.block = kWarpBlockSize;
    plan.ragged = kRagged;
    plan.read_ahead = kAhead;
    plan.one_row = false;
    plan.launch = &LaunchWarp<T, kAlgorithm, Shape, kRagged, kAhead>;
    const auto* kernel = reinterpret_cast<const void*>(
        &WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs, kRagged, Shape::bytes,
                           Shape::rows, kAhead>);
    const int64_t rows_per_block =
        (kWarpBlockSize / kWarpSize) * (kWarpSize / Shape::width) * kRows;
    SetGrid(plan, (rows + rows_per_block - 1) / rows_per_block, info,
            MaxActiveBlocksPerSm(kernel, info, kWarpBlockSize, 0), /*persistent=*/false);
  };
  if constexpr (kWarpReadAheadShape<T, Shape, kRagged>) {
    const auto* ahead_kernel =
        reinterpret_cast<const void*>(&WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs,
                                                         kRagged, Shape::bytes, Shape::rows, true>);
    if (ahead == ReadAheadChoice::kOn ||
        (ahead == ReadAheadChoice::kPlanned && ReadAheadRunsOn(ahead_kernel, info))) {
      fill(std::true_type{});
      return;
    }
  }
  fill(std::false_type{});
}

// Fills `plan` for the warp rung Shape; `ragged`: rows may have edge columns.
template <typename T, Algorithm kAlgorithm, typename Shape>
void PlanWarp(const CudaDeviceInfo& info, int64_t rows, bool ragged, Plan& plan,
              ReadAheadChoice ahead = ReadAheadChoice::kPlanned) {
  if (ragged) {
    PlanWarpRung<T, kAlgorithm, Shape, true>(info, rows, plan, ahead);
  } else {
    PlanWarpRung<T, kAlgorithm, Shape, false>(info, rows, plan, ahead);
  }
}

// The uncached packs a block_online thread holds in registers from pass 1 to pass 2, so that
// they are read once (the rest are read again in pass 2): enough for 16-bit rows of 65536 columns
// on two blocks of 512 an SM and float ones on one block of 1024 (2 and 1.8 packs a thread).
constexpr int kOnlineHeldPacks = 2;

// For a row that only one block per SM can cache whole: two blocks of half the largest size per
// SM instead, each caching what half of the SM's shared memory holds and reading the rest of the
// row twice (block_online; the second read mostly hits L2). With one block, nothing on the SM
// overlaps a row's copy with the arithmetic on it; with two, each block's copy overlaps the
// other's arithmetic. Measured on an H200 (tools/softmax_lab.cu): float 32768 cols 0.82 ->
// 0.93x copy, half and bfloat16 65536 0.71-0.72 -> 0.76-0.78x. False when two do not fit.
template <typename T, Algorithm kAlgorithm>
bool PlanTwoPerSm(const CudaDeviceInfo& info, int64_t rows, int64_t window, Plan& plan) {
  constexpr int kBlock = kMaxBlockSize<T> / 2;
  const auto* kernel = reinterpret_cast<const void*>(
      &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
  // Half the SM's shared memory, less the 1 KiB the runtime reserves per block and a margin for
  // the kernel's static shared memory (BlockAllReduce's posts).
  const size_t half = static_cast<size_t>(info.max_shared_memory_per_sm) / 2;
  if (half < 4096) { return false; }
  const size_t smem =
      std::min<size_t>((half - 2048) / kPackBytes * kPackBytes, MaxDynamicSmem(kernel, info));
  const int64_t cached = std::min<int64_t>(window, static_cast<int64_t>(smem / kPackBytes));
  if (cached < kBlock) { return false; }  // block_online stages stores in each thread's slot
  const size_t used = static_cast<size_t>(cached) * kPackBytes;
  const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, used);
  if (active < 2) { return false; }
  plan.path = cached == window ? Path::kBlockSmem : Path::kBlockOnline;
  plan.block = kBlock;
  plan.cached_packs = static_cast<int>(cached);
  plan.smem = used;
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>;
  SetGrid(plan, rows, info, active, /*persistent=*/false);
  return true;
}

// The longest 16-bit row, in packs, that block_smem gives 64 threads rather than 128.
constexpr int64_t kSmallBlockPacks = 640;

// The warp_tile ladder: kWidth lanes a row (1, 2, 4 or 8) times up to kWords words a lane (9, 13,
// 17 or 25), two tiles a warp. A row of cols elements of T is cols * sizeof(T) / 4 words; it
// takes the rung whose width is the largest power of two dividing that count, so that the count
// over the width is odd, and whose words hold that odd count with at least 7 of them
// (PlanTileRows).
template <typename Fn>
void ForEachTileShape(Fn&& fn) {
  auto widths = [&](auto words_tag) {
    constexpr int kWords = decltype(words_tag)::value;
    fn(TileShape<1, kWords, 2>{});
    fn(TileShape<2, kWords, 2>{});
    fn(TileShape<4, kWords, 2>{});
    fn(TileShape<8, kWords, 2>{});
  };
  widths(std::integral_constant<int, 9>{});
  widths(std::integral_constant<int, 13>{});
  widths(std::integral_constant<int, 17>{});
  widths(std::integral_constant<int, 25>{});
}

// The fewest words a lane of a warp_tile rung takes: rows of 1-5 words a lane (after the width)
// stay on the warp path.
constexpr int64_t kTileMinWords = 7;

// Fills `plan` for the warp_tile rung Shape. The caller has checked that the rung takes the row
// (see TileSoftmaxKernel) and that x and y are 16-byte aligned.
template <typename T, Algorithm kAlgorithm, typename Shape>
void PlanTile(const CudaDeviceInfo& info, int64_t rows, int64_t cols, Plan& plan) {
  constexpr int kRows = kTileRows<Shape::width>;
  constexpr int64_t kRowsPerBlock = int64_t{kTileBlockSize / kWarpSize} * Shape::tiles * kRows;
  const auto* kernel =
      reinterpret_cast<const void*>(&TileSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::words,
                                                       Shape::tiles, Shape::min_blocks>);
  plan.path = Path::kWarpTile;
  plan.pack = PackSize<T>::value;
  plan.width = Shape::width;
  plan.cols_per_thread = Shape::words * PackSize<T, 4>::value;
  plan.tiles_per_warp = Shape::tiles;
  plan.block = kTileBlockSize;
  // 4 warps x tiles x (32 / width) rows of at most width x words 32-bit words: 512 x tiles x
  // words bytes at most (25 KiB for two tiles of 25 words), within the 48 KiB a block gets
  // without opting in to more.
  static_assert(512 * Shape::tiles * Shape::words <= 48 * 1024, "a rung's tiles fit in 48 KiB");
  plan.smem = static_cast<size_t>(kRowsPerBlock * cols) * sizeof(T);
  plan.launch = &LaunchTile<T, kAlgorithm, Shape>;
  SetGrid(plan, (rows + kRowsPerBlock - 1) / kRowsPerBlock, info,
          MaxActiveBlocksPerSm(kernel, info, kTileBlockSize, plan.smem), /*persistent=*/false);
}

// Fills `plan` for the warp_tile path if its ladder takes rows of `cols` elements (x and y must
// be 16-byte aligned; the caller checks): float and the 16-bit types, rows a whole number of 32-bit
// words, whose count is an odd number from 7 to 25 times 1, 2, 4 or 8 lanes. That count is the
// condition for conflict-free shared memory: with W lanes a row and a row of W * K words (K odd),
// the rows of a tile start W * K * i words apart, which modulo the 32 banks are distinct
// multiples of W, so a warp's 32 lanes read 32 different banks at every step. Measured on an
// H200 (tools/softmax_lab.cu, tile=WxKx2 against the default plan; fractions of copy, softmax):
// half 100 cols 0.88 -> 0.997, bfloat16 0.85 -> 0.997, float 100 0.90 -> 0.98, half 52 0.85 ->
// 0.95, half 200 0.90 -> 0.95, half 50 0.79 -> 0.97, float 25 0.84 -> 0.98. Rows that fill
// under two thirds of a rung's words lost (half 60, 15 words of 25 on 2 lanes: 0.84 against
// 0.88; half 80, 5 of 13 on 8 lanes: 0.65 against 0.86), as did, without the odd count, rows of
// a power-of-two number of words (half 64 on 2 lanes x 16 words: 0.48 against 0.97), whose rows
// all start on one bank.
template <typename T, Algorithm kAlgorithm>
bool PlanTileRows(const CudaDeviceInfo& info, int64_t rows, int64_t cols, Plan& plan) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    constexpr int kPerWord = PackSize<T, 4>::value;
    if (cols % kPerWord != 0) { return false; }
    const int64_t row_words = cols / kPerWord;
    const int64_t width = row_words & -row_words;  // the largest power of two dividing it
    const int64_t words = row_words / width;
    if (width > 8 || words < kTileMinWords) { return false; }
    bool chosen = false;
    ForEachTileShape([&](auto shape) {
      using Shape = decltype(shape);
      if (chosen || Shape::width != width || Shape::words < words) { return; }
      chosen = true;
      PlanTile<T, kAlgorithm, Shape>(info, rows, cols, plan);
    });
    return chosen;
  }
}

// Which kernel block_registers runs for rows of whole 16-byte packs (x aligned, cols a multiple
// of the pack): kPlanned, the planner's choice (PlansWholeRowsKernel); kRagged, the kernel for
// rows of any alignment; kWhole, the one for whole packs (for the lab's comparison: outside the
// lab only the planned shapes have it).
// kOneRow, the kernel of a block a row for rows that fill the shape (kOneRow in
// BlockRegisterSoftmaxKernel), where the row does.
enum class RowsKernel { kPlanned, kRagged, kWhole, kOneRow };

// Whether the block_registers shape has a whole-rows kernel (kRagged = false) with the store
// fallback `fallback` outside the lab (the lab builds one of each fallback for every shape), and
// whether the planner runs aligned rows of `window` packs on it: where it measured ahead of the
// ragged kernel. On an H200 (tools/softmax_lab.cu, fractions of copy):
//  * float, with kElements (NOTES item 53, three builds): 512 x 4 (8192 columns, +0.2-0.6%),
//    1024 x 8 (32768, +0.3-0.7%) and 128 x 4 for rows that leave every thread's fourth pack
//    empty (1536 columns, +0.5-0.75%; full rows, 2048 columns, -0.6%); 512 x 8 with kNone
//    (16384, +0.5-0.6%; items 57 and 60). float 512 x 2 at 4096 columns measured -0.6%; at
//    912-991 packs it runs the whole-rows kernel where the DRAM is wide (Plans512x2WholeRows).
//  * the 16-bit types (item 63, two rounds): 256 x 2 with kElements where every thread holds
//    two packs (4096 columns, +0.5-0.8%, item 53). Where the window is not a multiple of the
//    block, so threads hold different numbers of packs, every 16-bit shape with kPack: 256 x 2
//    3592-4032 columns 0.943-0.993 -> 0.999-1.008 (against kElements), 256 x 3 at 5000 0.960 ->
//    1.001 and at 5504 +0.4% (against the ragged kernel), 512 x 2 at 7504 +1.5-2.5% and at 8000
//    +0.3-0.8%, 128 x 4 at 3336 +1.0%, 128 x 3 at 2560 +0.2%; behind at 6000 (256 x 3, -0.7%)
//    and 3504 (128 x 4, -0.3%). Where it is a multiple, kPack lost 0.2-0.6% (3072 level,
//    4096, 6144, 8192), and those rows keep the ragged kernel but for 256 x 2's kElements (and
//    512 x 2's where the DRAM is narrow, below).
//  * 16-bit 128 x 1 (960-1024 columns where the DRAM is narrow, item 69), with kElements at
//    1024 and kPack below: ahead of the ragged kernel on an H100 (half, softmax / log_softmax:
//    960 columns 0.993 -> 0.998 / 0.990 -> 0.998, 1000 0.998 -> 0.999 / 0.995 -> 1.000, 1024
//    0.996 -> 0.997 / 0.994 -> 0.995).
//  * 16-bit 512 x 2 with kElements where every thread holds two packs (8192 columns), where the
//    DRAM is narrow at any row count (item 88): on an H100, half and bfloat16 softmax, 2112 rows
//    0.994-0.997 -> 1.003-1.004, 4224 0.992-0.997 -> 0.996-0.999, 1056 0.943-0.950 ->
//    0.960-0.962, 16384 ahead by 0.02-0.09% (log_softmax 0.07-0.13%). A kernel sending y out by
//    one bulk copy gained less there (item 88). On a wider DRAM up to
//    kWideDram512x2WholeMaxRowsPerSm rows an SM (Plans512x2WholeRows).
// Elsewhere the ragged kernel runs whole rows, as it does every row that is not whole packs;
// each kernel's registers and schedule are the compiler's choice.
template <typename T>
constexpr bool HasWholeRowsKernel(int block, int packs, StoreFallback fallback) {
  if constexpr (kIs16Bit<T>) {
    const bool pair = block == 256 && packs == 2;
    const bool single = block == 128 && packs == 1;
    if (fallback == StoreFallback::kElements) {
      return pair || single || (block == 512 && packs == 2);
    }
    return fallback == StoreFallback::kPack &&
           (pair || single || (block == 128 && (packs == 3 || packs == 4)) ||
            (block == 256 && packs == 3) || (block == 512 && packs == 2));
  } else if constexpr (std::is_same_v<T, float>) {
    if (fallback == StoreFallback::kNone) { return block == 512 && packs == 8; }
    return fallback == StoreFallback::kElements &&
           ((block == 128 && packs == 4) || (block == 512 && packs == 2) ||
            (block == 512 && packs == 4) || (block == 1024 && packs == 8));
  } else {
    return false;
  }
}
// The store fallback of the whole-rows kernel for rows of `window` packs (see above).
template <typename T>
constexpr StoreFallback WholeRowsFallback(int block, int packs, int64_t window) {
  if (std::is_same_v<T, float> && block == 512 && packs == 8) { return StoreFallback::kNone; }
  if (kIs16Bit<T> && window % block != 0) { return StoreFallback::kPack; }
  return StoreFallback::kElements;
}
// `whole_512x2`: whether 512 x 2's whole-rows kernel takes this window on this device and row
// count (Plans512x2WholeRows), for float and for the 16-bit types' full windows.
template <typename T>
constexpr bool PlansWholeRowsKernel(int block, int packs, int64_t window, bool whole_512x2) {
  const bool last_pack_empty = window <= int64_t{block} * (packs - 1);
  const StoreFallback fallback = WholeRowsFallback<T>(block, packs, window);
  const bool gated_512x2 = block == 512 && packs == 2 &&
                           (std::is_same_v<T, float> || fallback == StoreFallback::kElements);
  return HasWholeRowsKernel<T>(block, packs, fallback) &&
         (kIs16Bit<T> || block != 128 || last_pack_empty) && (whole_512x2 || !gated_512x2);
}
// Whether this build has the whole-rows kernel: the planner's, or in the lab every shape's, but
// kNone only where the planner has it.
template <typename T>
constexpr bool BuildsWholeRowsKernel(int block, int packs, StoreFallback fallback) {
#ifdef ONEFLITE_SOFTMAX_LAB
  if (fallback != StoreFallback::kNone) { return true; }
#endif
  return HasWholeRowsKernel<T>(block, packs, fallback);
}
// Calls fn(std::integral_constant<StoreFallback, F>{}) with F = `fallback` if this build has
// that whole-rows kernel for kBlock x kPacks (BuildsWholeRowsKernel), and says whether it did:
// the run-time choice of WholeRowsFallback turned into the template argument of the kernel.
template <typename T, int kBlock, int kPacks, typename Fn>
bool WithWholeRowsKernel(StoreFallback fallback, Fn&& fn) {
  bool found = false;
  auto take = [&](auto fallback_tag) {
    constexpr StoreFallback kFallback = decltype(fallback_tag)::value;
    if constexpr (BuildsWholeRowsKernel<T>(kBlock, kPacks, kFallback)) {
      if (fallback == kFallback) {
        fn(fallback_tag);
        found = true;
      }
    }
  };
  take(std::integral_constant<StoreFallback, StoreFallback::kElements>{});
  take(std::integral_constant<StoreFallback, StoreFallback::kPack>{});
  take(std::integral_constant<StoreFallback, StoreFallback::kNone>{});
  return found;
}

// float block_registers on 512 threads of 4 packs (rows of 1537-2048 packs, 6145-8192 columns)
// runs 3 blocks an SM rather than the 4 its 32 registers allow, held there by shared memory
// (HoldBlocksPerSmSmem), once the launch has kHoldMinWaves waves of them. (The ragged softmax
// kernel's 34 registers hold it to 3 already: 1280 a warp once rounded to the allocation
// unit.) Measured on an H200 (tools/softmax_lab.cu, hold=off and occ=3 against the plan;
// fractions of copy, softmax / log_softmax): 6144 columns 0.968 -> 0.978 / 0.968-0.970 ->
// 0.980-0.983, 6200 0.976 -> 0.988-0.991 / 0.975-0.977 -> 0.990-0.991, 7000 0.975-0.978 ->
// 0.982-0.985, 8192 0.979-0.980 -> 0.983 / 0.979-0.980 -> 0.983-0.984 (level with the
// benchmark's Triton kernel, whose 38 registers give it 3 blocks an SM too), log_softmax rows
// off a 16-byte boundary (7001) +0.8% (softmax's, at 3 blocks by registers, level with it held
// by shared memory as well). Short launches gain nothing or lose (8192 columns: 4096 rows, 10
// waves of 3 blocks an SM, -0.2 to -1.1%; 6336 rows -0.2 to -0.4%; 8192 rows level; 12288 rows,
// 31 waves, +0.2-0.4%). Shapes of 2 packs a thread lost heavily at 3 blocks an SM (float 512 x
// 2 at 4096 columns 0.995 -> 0.926, 16-bit 512 x 2 at 8192 0.975 -> 0.908): too few loads in
// flight (NOTES item 59).
constexpr int kFloatHeldPerSm = 3;
constexpr int64_t kHoldMinWaves = 24;
inline void HoldFloat512x4(const void* kernel, const CudaDeviceInfo& info, int64_t rows,
                           int& active, Plan& plan) {
  if (active <= kFloatHeldPerSm || rows < kHoldMinWaves * kFloatHeldPerSm * info.sm_count) {
    return;
  }
  if (const size_t smem = HoldBlocksPerSmSmem(kernel, info, 512, kFloatHeldPerSm); smem > 0) {
    plan.smem = smem;
    plan.held_per_sm = kFloatHeldPerSm;
    active = kFloatHeldPerSm;
  }
}

// float block_registers on 128 threads of 4 packs, for rows that fill at least 59/64 of it
// (472-512 packs, 1885-2048 columns; the ragged kernel), runs 7 blocks an SM rather than the 16
// (log_softmax, 32 registers) or 12 (softmax, 40) that registers allow, by preferring the
// smallest carve-out (CarveoutBlocksPerSm), once the launch has kHoldMinWaves waves of them.
// Measured on an H200 (tools/softmax_lab.cu, carve=0 against the plan, 98304 rows unless said;
// fractions of copy, softmax / log_softmax): 1888 columns 0.987 -> 1.001-1.003 / 0.985 -> 0.989,
// 1904 0.985 -> 1.000 / 0.984 -> 0.989-0.990, 1920 0.991 -> 1.006-1.008 / 0.987 -> 0.998, 2000
// 0.995 -> 1.008-1.010 / 0.992 -> 1.010-1.011, 2048 0.981 -> 0.983-0.984 / 0.980-0.981 ->
// 0.985-0.987; 2048 columns at 22176 rows (24 waves of 7; hold=off against the planner) 0.977
// -> 0.986-0.987 / 0.978-0.981 -> 0.990-0.991, at 24576 rows 0.986 -> 0.988-0.990 / 0.987 ->
// 0.998-1.000, at 32768 rows 0.975 -> 0.972-0.973 / 0.977 -> 0.975-0.978, at 16384 (18 waves)
// 0.981-0.985 -> 0.990-0.992 / 0.990-0.993 -> 0.986-0.989, and short launches lost (4096 rows:
// 1.005 -> 0.977-0.981 / 1.018-1.024 -> 0.966-0.967; 1024 rows -8% / -10%). Rows that fill less
// lost: 1856 columns +0.9% / -0.5%, 1792 +1.0% / -1.1%, 1664 -1.3% / -4%, 1536 -5%, and
// so did 8 values a thread (128 x 2 at 768-1024 columns: -14 to -26%); 16-bit 256 x 2 (4096
// columns) measured level. Holding these blocks with shared memory instead did not hold them:
// the driver kept the default carve-out (see kHoldCarveoutBytes).
constexpr int64_t kFloat128x4HeldWindow = 472;
inline bool HoldFloat128x4(const void* max_l1_kernel, const CudaDeviceInfo& info, int64_t rows,
                           int64_t window, int& active, Plan& plan) {
  if (window < kFloat128x4HeldWindow) { return false; }
  const int held = CarveoutBlocksPerSm(max_l1_kernel, info, 128, cudaSharedmemCarveoutMaxL1);
  if (held <= 0 || held >= active || rows < kHoldMinWaves * held * info.sm_count) { return false; }
  plan.held_per_sm = held;
  plan.max_l1 = true;
  active = held;
  return true;
}

// The 16-bit block_registers shapes and the windows (16-byte packs, 8 elements) each takes:
// 128 x 3 packs from 3/4 full for half (288-384 packs, 2297-3072 aligned columns; half's warp
// path stops at 256) and from 15/16 for bfloat16 (360-384, 2873-3072), whose warp path holds
// rows of up to 384 packs; 128 x 4 for 385-448 packs (half) or 400-448 (bfloat16: 385 packs
// stay on its warp path, 0.991 of copy against 0.91); 256 x 2 for 449-512 (from 7/8); 256 x 3
// from 13/16 (624-768 packs); 512 x 2 from 7/8 (896-1024; from 3/4, half 6144 columns measured
// 0.89-0.91 of copy against block_smem's 0.97). Measured on an H200
// (tools/softmax_lab.cu, registers=BxN against the path that had the row; fractions of copy,
// softmax / log_softmax, half then bfloat16): 128 x 3 at 2304 columns (288 packs) 0.889 /
// 0.914 -> 0.973 / 0.975 (block_smem), bfloat16 1.005 / 1.008 -> 0.972 / 0.977 (warp); at 2560
// 0.922 / 0.923 -> 0.984 / 0.987, bfloat16 0.979 / 0.976 -> 0.984 / 0.987; 2777 0.788 / 0.808
// -> 0.979 / 0.983, bfloat16 0.961 / 0.994 -> 0.979 / 0.981; 3072 0.927 / 0.926 -> 0.987 /
// 0.989, bfloat16 0.975 / 0.974 -> 0.988 / 0.987; 3072 columns on 4096 rows 0.804 -> 0.972 and
// on 1024 rows 0.709 -> 0.943 (half softmax); 2049 (257 packs) 0.99 -> 0.85 (warp). 128 x 4 at
// 3073 columns 0.777 / 0.797 -> 0.913 / 0.909, bfloat16 0.991 -> 0.91 (warp); 3200 0.941 /
// 0.944 -> 0.989 / 0.989; 3333 0.890 / 0.916 -> 0.954 / 0.952, bfloat16 0.819 / 0.844 -> 0.954 /
// 0.951; 3500 0.942 / 0.946 -> 0.983 / 0.981; 3584 (448 packs) 0.953 / 0.952 -> 1.018 / 1.018
// (256 x 2), bfloat16 0.947 / 0.948 -> 1.013 / 1.016; 4096 0.976 / 0.974 -> 0.969 / 0.967 (256
// x 2 kept). 256 x 3 at 5000 columns (625 packs) 0.937 / 0.939 -> 0.959 / 0.956, bfloat16 0.939
// / 0.943 -> 0.958 / 0.957 (block_smem); 6000 0.988 / 0.987 -> 0.999 / 1.004, bfloat16 0.917 /
// 0.953 -> 1.003 / 1.004; 4500 (563 packs) 0.93 -> 0.88.
struct RegistersShape {
  int block;
  int packs;
  int least;  // the fewest window packs it takes
  int most;   // the most: block * packs, or fewer
};
template <typename T>
constexpr RegistersShape k16BitShapes[] = {
    {128, 3, std::is_same_v<T, __half> ? 288 : 360, 384},
    {128, 4, std::is_same_v<T, __half> ? 385 : 400, 448},
    {256, 2, 449, 512},
    {256, 3, 624, 768},
    {512, 2, 896, 1024},
};

// The float shapes and the windows (16-byte packs, 4 elements) each takes: from 3/4 full (7/8 of
// 1024 x 8, which fills an SM alone: there padding idles the SM's only row, float 24576 cols at
// 3/4 of it 0.897x copy against 0.955x on block_smem with two blocks of 512 an SM), but 128 x 3
// from 257 packs and 256 x 3 from 513, the rows just past 128 x 2 and 128 x 4 (1025-1535 and
// 2049-3071 aligned columns; 384 and 768 packs stay on 128 x 4 and 256 x 4). Those two, measured
// against the warp path (128 x 3; and 256 x 3 at 2049-2051 columns, 512 whole packs, on its
// 32 x 16 rung) and block_smem (256 x 3) on both devices (tools/softmax_lab.cu,
// 98304 or 2^27 / cols rows, registers=BxN; fractions of copy, softmax / log_softmax):
//  * 128 x 3, H100: 1025 columns 0.982 -> 0.989 / 0.981 -> 0.989, 1100 0.992 -> 0.993 / 0.933 ->
//    0.992, 1201 0.988 -> 0.992 / 0.986 -> 0.992, 1300 0.992 -> 0.994 / 0.926 -> 0.993, 1500
//    0.989 -> 0.993 / 0.923 -> 0.994; H200: 1025 0.972 -> 0.989 / 0.971 -> 0.988, 1100 0.983 ->
//    0.999 / 0.927 -> 1.000, 1300 0.974 -> 0.988 / 0.915 -> 0.990, 1500 0.982 -> 0.988 / 0.915
//    -> 0.987 (the warp path's log_softmax rung of 12 packs a lane ran at 0.92-0.93 on both);
//    at 1536, 128 x 4 stays ahead (1.000-1.004 against 0.999-1.001).
//  * 256 x 3, H100: 2049 0.992 -> 0.999 / 0.988 -> 0.999, 2100 0.980 -> 1.001 / 0.980 -> 1.001,
//    2500 0.978 -> 1.000 / 0.979 -> 1.001, 2700 0.977 -> 1.001 / 0.977 -> 0.999, 3000 0.994 ->
//    1.001 / 0.996 -> 1.001; H200: 2049 0.982 -> 0.995 / 0.978 -> 0.998, 2100 0.905 -> 0.994 /
//    0.947 -> 0.995, 2500 0.916 -> 0.987 / 0.953 -> 0.991, 2800 0.973 -> 0.988 / 0.983 -> 0.987,
//    3000 0.984 -> 0.989 / 0.980 -> 0.987; at 3072, 256 x 4 stays (level on the H100, 0.981 /
//    0.976 against 0.984 / 0.982 on the H200). (NOTES.md, item 69.)
constexpr RegistersShape kFloatShapes[] = {
    {128, 2, 192, 256},  {128, 3, 257, 383},   {128, 4, 384, 512},   {256, 3, 513, 767},
    {256, 4, 768, 1024}, {512, 4, 1536, 2048}, {512, 8, 3072, 4096}, {1024, 8, 7168, 8192},
};

// 16-bit rows of 1792-2048 window packs (14329-16384 aligned columns) on 512 x 4, 32 values a
// thread (Triton's shape for them), where the device's DRAM is narrow for its SMs (under
// kNarrowDramGBpsPerSm, CudaDeviceInfo::PeakDramGBpsPerSm); on a wider one they keep the cached
// tail (PlanCachedTail): a faster DRAM needs more bytes in flight for each SM's share, the likely
// reason (not a measured one) the two devices differ (NOTES.md, item 68). Measured
// (tools/softmax_lab.cu, registers=512x4 against the plan, fractions of copy, softmax /
// log_softmax; half and bfloat16 within 0.3%): on an H100 (25 GB/s an SM) 14336 columns 0.983
// -> 0.994 / 0.984 -> 0.991, 15360 0.979 -> 0.994 / 0.983 -> 0.995, 16000 0.996 -> 1.013 / 0.995
// -> 1.008, 16384 0.979 -> 0.997 / 0.983 -> 0.997 (Triton's kernel 0.990-0.997 at 14336-16384),
// and behind at 13000 (1625 packs: 0.990 -> 0.987 / 0.992 -> 0.981); on an H200 (36 GB/s an SM)
// behind throughout, 14336 0.964 -> 0.872, 16384 0.948 -> 0.921 (softmax; log_softmax alike).
constexpr double kNarrowDramGBpsPerSm = 30.0;
constexpr int64_t kNarrowDram512x4LeastPacks = 1792;
inline bool NarrowDram(const CudaDeviceInfo& info) {
  return info.PeakDramGBpsPerSm() < kNarrowDramGBpsPerSm;
}

// 16-bit rows of exactly 1024 packs (8192 aligned columns) on 512 x 2, every thread's two packs
// full: the whole-rows kernel (PlansWholeRowsKernel) where the DRAM is narrow, at any row count
// (NOTES.md item 88), and on a wider DRAM up to kWideDram512x2WholeMaxRowsPerSm rows an SM
// (item 89). Measured on an H200 (tools/softmax_lab.cu, registers=512x2/whole against the
// ragged kernel, half and bfloat16, softmax / log_softmax, three rounds each unless marked
// "one"): 1056 rows +2.7-3.5% (one), 2112 +1.2-1.8% / +2.0-2.8%, 4224 +1.0-1.3% / +1.9-2.2%,
// 6336 +0.4-2.6% / +0.5-3.5% (a fourth round: half softmax -2.0%), 8448 (64 an SM) +0.4-0.5% /
// +0.9-1.1%; past it level, then behind: 10560 -0.3 to +0.1% / +0.1-0.7%, 12672 level (one),
// 14784 -0.5% / -0.3% to level (one), 16384 (the benchmark's rows) -0.3-0.6% / -0.6-0.7%.
// Why the wider DRAM turns it at about 80 rows an SM, the H100's not, is not known.
constexpr int64_t kWideDram512x2WholeMaxRowsPerSm = 64;

// float rows of 912-991 window packs (3648-3964 aligned columns, 89-97% of the shape) on 512 x 2
// by the whole-rows kernel where the DRAM is wide (an H200), once there are 128 rows an SM,
// instead of 256 x 4; Triton's kernel runs them on 512 threads of 8 values as well. (From 992
// packs 512 x 2 takes the rows on any device, by the ragged kernel: PlanBlockRegisters.) Measured
// on an H200 (tools/softmax_lab.cu, 2^27 / cols rows, registers=512x2/whole against the plan,
// interleaved, 100 calls, two to five rounds; fractions of copy, softmax / log_softmax, Triton's
// kernel in brackets): 3648 columns 0.987-0.988 -> 0.997 / 0.986-0.988 -> 0.994-0.998
// (1.006-1.007), 3712 0.986-0.988 -> 1.000-1.002 / 0.985-0.986 -> 0.998-1.001 (1.005-1.007),
// 3840 0.973-0.976 -> 0.991-0.994 / 0.973-0.977 -> 0.989-0.997 (0.990-0.993); less ahead at 3584
// (896 packs: 0.987-0.989 -> 0.992-0.994 / 0.986-0.989 -> 0.991-0.993) and level with fewer rows
// there, level at 3552, behind at 3520 (-0.3%) and 3456 (864 packs: 0.988-0.991 -> 0.980 /
// 0.988-0.989 -> 0.979-0.981). At 3968-4000 columns (992-1000 packs) it ran 0.4-1.0% ahead of the
// ragged 512 x 2 and at 4064-4096 0.3% behind to level, so those rows keep the ragged kernel.
// Fewer rows (one round; softmax 3840 / log_softmax 3712): 25344 +0.7% / 21120 +0.7%, 16896 (128
// an SM) +1.3% / +0.3%, 12672 - / -0.4%, 8448 -0.9% / -, 4224 -3.4% / -. Rows off a 16-byte
// boundary lost on the ragged 512 x 2 (3583 columns 0.980 -> 0.952, 3711 0.977 -> 0.965) and keep
// 256 x 4. An H100 keeps its own rule (kNarrowDramFloat512x2LeastPacks). (NOTES.md, item 93.)
constexpr int64_t kWideDramFloat512x2LeastPacks = 912;
constexpr int64_t kWideDramFloat512x2MostPacks = 991;
constexpr int64_t kWideDramFloat512x2MinRowsPerSm = 128;

// Whether 512 x 2's whole-rows kernel takes aligned rows of `window` packs (see above): float's
// on a wide DRAM, in its range; the 16-bit types' full windows where the DRAM is narrow or the
// rows are few. (The 16-bit windows that leave threads uneven always take it: kPack.)
template <typename T>
bool Plans512x2WholeRows(bool narrow_dram, int64_t rows, int sm_count, int64_t window) {
  if constexpr (std::is_same_v<T, float>) {
    return !narrow_dram && window >= kWideDramFloat512x2LeastPacks &&
           window <= kWideDramFloat512x2MostPacks;
  } else {
    return narrow_dram || rows <= kWideDram512x2WholeMaxRowsPerSm * sm_count;
  }
}

// Rows that start on 128-byte lines (row bytes a multiple of kLineBytes, x and y on a line,
// which the launch checks), on the block_registers shapes of kMaxSharedShape (rows of 4-16 KiB),
// where the DRAM is narrow: the kernel's copy that prefers the largest shared-memory carve-out,
// which leaves L1 28 KiB of the SM's 256 and changes no block's residency. Once the launch has
// kHoldMinWaves waves. Measured on an H100 (tools/softmax_lab.cu, carve=100 against the plan,
// fractions of copy, NOTES.md item 79): float 960 columns 0.996 -> 1.002, 1024 0.995 -> 0.998
// (log_softmax 0.994 -> 0.998), 1536 1.002 -> 1.007 (1.002 -> 1.006), 1600 1.002 -> 1.008,
// 2048 (held 7 an SM before) 0.997 -> 1.001 (log_softmax level), 4000 1.006 -> 1.010, 4096
// 1.006 -> 1.011 (1.007 -> 1.012); half 2304 1.016 -> 1.022, 3072 0.999 -> 1.004 (log_softmax
// and bfloat16 alike), 3584 1.017 -> 1.022, 4096 1.002 -> 1.005 (bfloat16 1.002 -> 1.004). Rows
// that do not start on a line lost 0.5-2.7% (float 1000, 1300-2000, 3000, 3600; half 2500, 2800,
// 3000, 3500, 4000, 7500); so did float 512 x 2 on rows that fill 3/4 of it or less
// (kMaxSharedLeastWindow), float 1024 at 16384 rows (8 waves, -0.4%), and the shapes of 32-64
// KiB rows (half 16384 on 512 x 4 -2.7%, float 16384 on 1024 x 4 -20%), none of which take it.
// 16-bit 512 x 2 measured level at 7168-8192 columns (NOTES.md item 81) and does not take it.
// Why less L1 streams these rows faster is not known. Not measured on an H200 (wider DRAM),
// where the largest carve-out measured 1.4% slower for float 8192 (kHoldCarveoutBytes).
inline bool PreferMaxShared(const CudaDeviceInfo& info, int64_t rows, int64_t row_bytes,
                            int active) {
  return NarrowDram(info) && row_bytes % kLineBytes == 0 &&
         rows >= kHoldMinWaves * active * info.sm_count;
}

// 16-bit rows of whole packs with 120-128 window packs (960-1024 aligned columns), which the
// warp path gives 32 lanes of 4 packs: one pack a thread on 128 threads (Triton's shape for
// them; the whole-rows kernel) where the DRAM is narrow, else 2 packs a thread on 64 threads.
// Measured (tools/softmax_lab.cu, 98304 rows, registers=128x1/whole and registers=64x2 against
// the warp path; fractions of copy, softmax / log_softmax, half; bfloat16 within 0.3%): on an
// H100 128 x 1 at 960 columns 0.995 -> 0.998 / 0.994 -> 0.998, 992 0.994 -> 1.002 / 0.992 ->
// 1.000, 1000 0.991 -> 0.999 / 0.991 -> 1.000, 1008 0.997 -> 1.002 / 0.995 -> 1.001, 1016
// 0.987 -> 0.990 / 0.986 -> 0.990, 1024 0.994 -> 0.997 / 0.992 -> 0.995 (Triton's kernel
// 0.995-0.998 at 1024), where 64 x 2 was level or behind (1024: 0.988-0.991); on an H200 128 x 1
// lost 6-9% (1024: 0.987 -> 0.930) and 64 x 2 won, 960 0.988 -> 0.992 / 0.989 -> 0.993, 992
// 0.988 -> 0.998 / 0.988 -> 0.999, 1000 0.982 -> 0.993 / 0.980 -> 0.996, 1016 0.984 -> 0.997 /
// 0.986 -> 0.997, 1024 0.987 -> 1.007 / 0.987 -> 1.006. Both lost where a row fills less (128 x
// 1 at 900 columns 0.934 on the H100; 64 x 2 at 768-800 0.93 on the H200) and on rows off a
// 16-byte boundary (1001 columns: 0.95-0.96 and 0.92 against the warp path's 0.97-0.99), which
// stay on the warp path. Both need many rows, 384 an SM (24 waves of 128 x 1): fewer lost
// (warp path -> 128 x 1 on the H100, 64 x 2 on the H200, 1000 / 1024 columns, softmax): 16384
// rows 1.005 -> 0.972 / 1.025 -> 0.979 and 0.970 -> 0.923 / 0.972 -> 0.940, 32768 0.980 ->
// 0.972 / 1.002 -> 1.000 and 0.971 -> 0.975 / 0.984 -> 0.987; from 49152 rows level or ahead
// (H100 0.983 -> 0.985 / 0.999 -> 1.000, H200 0.976 -> 0.987 / 0.974 -> 0.988). (NOTES.md, item
// 69.) Where the DRAM is narrow, rows of exactly 1024 aligned columns take the warp path's
// one-row kernel up to 1024 rows an SM instead (kWarpOneRowRules, item 107).
constexpr int64_t k16BitSmallLeastPacks = 120;
constexpr int64_t k16BitSmallMinRowsPerSm = 384;

// 16-bit rows of whole packs with 192-256 window packs (1536-2048 aligned columns), which the
// warp path gives 32 lanes of 6-8 packs: two packs a thread on 128 threads (by the ragged kernel,
// the one block_registers has for that shape) where the DRAM is narrow, once there are 256 rows
// an SM. Measured on an H100 (tools/softmax_lab.cu, registers=128x2 against the warp path, two
// rounds, fractions of copy, softmax / log_softmax, half; bfloat16 within 0.3%), 98304 rows: 1536
// columns 0.995 -> 1.001-1.002 / 0.995 -> 1.002, 1600 0.995-0.997 -> 1.002-1.004 / 0.996 ->
// 1.003, 1792 0.994-0.995 -> 1.000-1.001 / 0.994-0.995 -> 0.999, 2000 0.992-0.995 -> 0.996-0.999
// / 0.995 -> 0.997-1.000, 2040 0.989 -> 0.991-0.992, 2048 0.992-0.994 -> 0.995-0.996 / 0.993 ->
// 0.996 (Triton's kernel, 8 warps of 16-byte packs, 0.985 at 2048); it lost on rows that fill
// less of it (1400 columns, 175 packs: 0.993 -> 0.984; 1280: 0.995 -> 0.965) and on rows off a
// 16-byte boundary (1500 columns: 0.991 -> 0.979; 1700 and 1900 level or +0.3%), which keep the
// warp path. With fewer rows it lost at 1536 columns (4224 to 16896 rows: 0.978-0.998 ->
// 0.949-0.982), level from 33792 (0.991-0.995 -> 0.994-0.996); at 2048 it was ahead from 16896
// rows (0.989-0.994 -> 0.996-0.998), level or 0.6% behind at 8448 and level to 1.2% ahead at
// 4224. 128 x 2 by the whole-rows
// kernel (0.995-0.998 at 1536-1792) and 256 x 1 (0.908-0.984) were behind the ragged kernel.
// Not measured on an H200. (NOTES.md, item 86.)
constexpr int64_t k16BitPairsLeastPacks = 192;
constexpr int64_t k16BitPairsMinRowsPerSm = 256;

// float rows of 512 aligned columns (128 whole packs), which the warp path gives 32 lanes of 4
// packs a row, one row a warp: one pack a thread on 128 threads (Triton's shape for them) where
// the DRAM is narrow, once there are 512 rows an SM. The warp path starts a launch faster; 128 x
// 1 streams faster once the launch's steady state dominates. Measured on an H100
// (tools/softmax_lab.cu, registers=128x1 against the plan, two rounds, fractions of copy, softmax
// / log_softmax): 49152 rows 1.006 -> 1.000 / 1.005 -> 1.002, 98304 0.998 -> 0.995 / 0.997 ->
// 0.995, 196608 0.994 -> 1.002 / 0.993 -> 1.002, 393216 0.996 -> 1.002 / 0.996 -> 1.003 (Triton's
// kernel 1.000, 0.996, 1.002, 1.002). In the benchmark's timing (python -m oneflite.bench, 100
// rounds over 4 placements) the crossover comes sooner: the warp path against Triton's kernel,
// which the lab has within 0.1% of 128 x 1 at every row count, 24576 rows +0.9-1.2%, 49152
// +0.1-0.5%, 98304 -0.3 to -0.5%, 196608 -0.5%; with the rule, 98304 rows level with Triton
// (0.9991x, interval 0.9980-1.0006) and log_softmax 1.0045-1.0060x torch. Rows that leave threads
// idle lost: log_softmax at 480 columns (120 packs) 0.997-0.998 of copy on the warp path, 0.986-
// 0.991 on 128 x 1, and Triton's kernel led 128 x 1 there by 0.5% (softmax). 64 x 2 was behind
// both (98304 rows: 0.988-0.990). On an H200 the 16-bit twin of this shape lost 6-9% (above), so
// wider DRAM keeps the warp path. (NOTES.md, item 71.)
constexpr int64_t kFloat128x1MinRowsPerSm = 512;

// float rows of 129-191 window packs (516-764 aligned columns), which the warp path gives one warp
// of 6 packs a lane, on two warps of 3 packs (64 x 3: as many slots) where the DRAM is wide (an
// H200), once there are 512 rows an SM. Each thread's chain of loads, exps and stores is half as
// long; 64-thread blocks still fill the SM (32 of them). Measured on an H200 (tools/softmax_lab.cu,
// 98304 rows, registers=64x3 against the warp path, interleaved, 100 calls, two to four rounds;
// fractions of copy, softmax / log_softmax; Triton's kernel, 128 threads of 2 packs, two rounds, in
// brackets): 520 columns 0.979-0.980 -> 0.985-0.986 / 0.978 -> 0.985-0.986 (0.882), 540 0.971-0.972
// -> 0.978-0.979 / 0.970 -> 0.978-0.979, 560 0.981 -> 0.987 / 0.981-0.982 -> 0.987-0.988 (0.945),
// 600 0.977-0.978 -> 0.982 / 0.976-0.977 -> 0.982 (0.938), 640 0.985-0.987 -> 0.991-0.992 / 0.985
// -> 0.991-0.992 (0.988), 700 0.970-0.972 -> 0.982-0.984 / 0.971-0.972 -> 0.983-0.984
// (0.982-0.983), 720 0.976-0.978 -> 0.983-0.986 / 0.977 -> 0.984-0.985 (0.990), 760 0.978-0.980 ->
// 0.986-0.988 / 0.977-0.978 -> 0.988 (0.991), 764 0.977-0.981 -> 0.986-0.991 / 0.976-0.978 ->
// 0.986-0.991. 96 x 2 (as many slots again) ran level with it from 560 columns and 0.8-2.5% behind
// below. Fewer rows (softmax, 560 / 640 / 720 columns): 49152 rows +0.7% / +0.6% / -0.9%, 33792
// +0.5% / +0.2% / +0.2%, 16896 -0.5% / -1.5% / -0.2%, 8448 -0.7% to -1.7%. Rows off a 16-byte
// boundary were level (521, 561, 763 columns: -0.2-0.1%) or ahead by 0.2-0.6% (639, 701, 759) and
// keep the warp path. Rows of 125 packs (500 columns, the warp path's rung of 4 packs a lane)
// measured 0.9% ahead too but, like the 4-pack rung's other rows, are left to it. An H100 was not
// measured. (NOTES.md, item 93.)
constexpr int64_t kWideDramFloat64x3LeastPacks = 129;
constexpr int64_t kWideDramFloat64x3MostPacks = 191;
constexpr int64_t kWideDramFloat64x3MinRowsPerSm = 512;

// float rows of 704-1024 window packs (2816-4096 columns) on 512 x 2, Triton's shape for them,
// where the DRAM is narrow, once the launch has 48 waves of them (the rows of 992-1024 packs take
// it on any device from 16: PlanBlockRegisters). Measured on an H100 (tools/softmax_lab.cu,
// 2^27 / cols rows, 37282-47662, registers=512x2 against 256 x 3 / 256 x 4; fractions of copy,
// softmax / log_softmax):
// 2800 columns 1.001 -> 1.009 / 1.001 -> 1.005, 2900 0.999 -> 1.010 / 1.000 -> 1.011, 3000 1.001
// -> 1.013 / 1.001 -> 1.013, 3072 0.996 -> 1.003 / 0.995 -> 1.003 (Triton's kernel 1.002-1.003),
// 3500 1.000 -> 1.007 / 1.001 -> 1.008, 3600 1.001 -> 1.007, 3900 0.999 -> 1.003 / 1.000 ->
// 1.004; behind at 2700 (0.999-1.001 -> 0.988-0.996) and below. On an H200 it lost up to 3900
// columns (3072: 0.984 -> 0.904, 3600: 0.988 -> 0.966). Fewer rows gained less or lost (waves of
// 4 blocks an SM; 2816 / 3072 / 3600 columns, softmax): 16384 rows (31 waves) 1.004 -> 0.998 /
// 1.001 -> 0.994 / 1.000 -> 1.002, 24576 (47) 1.001 -> 0.999 / 0.999 -> 1.002 / 0.998 -> 1.002,
// 32768 (62) 0.996 -> 1.000 / 0.998 -> 1.002 / 0.995 -> 0.999, 65536 1.003 -> 1.007 / 0.996 ->
// 1.000 / 0.994 -> 0.999. (NOTES.md, item 69.)
constexpr int64_t kNarrowDramFloat512x2LeastPacks = 704;
constexpr int64_t kNarrowDramFloat512x2MinWaves = 48;

// float rows of 257-448 window packs (1025-1792 aligned columns) on more threads of fewer packs
// where the DRAM is narrow, once there are 512 rows an SM: 192 x 2 for 257-319 packs (instead of
// 128 x 3) and 256 x 2 from 320, 5/8 of it full, to 448, 7/8 (instead of 128 x 3 or 128 x 4).
// Measured on an H100 (tools/softmax_lab.cu, 98304 rows, registers=192x2 and registers=256x2
// against the plan, two rounds, fractions of copy, softmax / log_softmax): 192 x 2 at 1025
// columns 0.988-0.989 -> 0.998 / 0.987-0.989 -> 0.996-0.997, 1100 0.992-0.994 -> 0.997-0.998 /
// 0.992-0.993 -> 0.997-0.998, 1201 0.989-0.990 -> 0.994-0.995 / 0.990 -> 0.992, 1300 0.990-0.991
// -> 0.991-0.993 / 0.991 -> 0.993, level from 1400 (350 packs); 256 x 2 at 1300 0.991 -> 1.002 /
// 0.989 -> 1.003, 1350 0.988 -> 0.999 / 0.987 -> 1.000, 1400 0.991-0.992 -> 0.998-1.000 /
// 0.990-0.991 -> 0.997, 1500 0.989-0.991 -> 0.994-0.995 / 0.989-0.991 -> 0.993-0.994, 1536
// 0.996 -> 0.998-0.999 / 0.996-0.997 -> 0.999 (Triton's kernel, the same shape, 0.999), 1600
// 0.994 -> 0.997 / 0.994 -> 0.996, 1800 0.988 -> 0.990 / 0.987 -> 0.989, and behind from 2000
// (500 packs: 0.991 -> 0.988); at 1025 it lost (0.987 -> 0.930: half its threads' second pack
// empty). Both need many rows (softmax): 32768 rows level (1025 0.985 -> 0.984, 1400 0.996 ->
// 0.997), 16384 behind (1025 0.977 -> 0.973, 1400 1.003 -> 0.996), 4096 2-3% behind. On an H200
// they were not measured; wider DRAM keeps 128 x 3 and 128 x 4. (NOTES.md, item 72.)
constexpr int64_t kNarrowDramFloat256x2LeastPacks = 320;
constexpr int64_t kNarrowDramFloatPairsMostPacks = 448;
constexpr int64_t kNarrowDramFloatPairsMinRowsPerSm = 512;

// float rows of 368-448 window packs (1469-1792 aligned columns; log_softmax from 400, 1597) on
// 224 threads of 2 packs where the DRAM is wide (an H200), once there are 360 rows an SM, instead
// of 128 x 4. Seven warps a row is the most that still lets 9 blocks share an SM (63 of its 64
// warps), and 9 rows an SM is what 4-warp blocks stream best at on an H200: held to 8 (by shared
// memory) 128 x 4 lost 5% (NOTES.md, item 90), and 128 x 3 held to 9 ran level with it and at
// 10 or 11 0.3-0.6% behind (item 91). More warps a row at the same rows an SM likely finish each
// row sooner. 8 warps (256 x 2, Triton's shape) allow only 8 blocks, where float's accurate exp
// leaves it 1.5% behind. Measured on an H200 (tools/softmax_lab.cu, registers=224x2 against the
// plan, 98304 rows unless said, interleaved, fractions of copy, softmax / log_softmax): 1472
// columns 0.999 -> 1.003-1.004 / 0.999 -> 0.996, 1536 1.001-1.004 -> 1.003-1.005 (ten rounds on
// three leases; Triton's kernel 1.005-1.006) / 1.003-1.005 -> 1.003, 1600 0.986 -> 0.994-0.998 /
// 0.984 -> 0.997-0.998, 1664 0.987-0.988 -> 0.991 / 0.988-0.989 -> 0.991-0.992, 1728 0.995 ->
// 0.998 / 0.994 -> 0.999, 1792 0.987-0.988 -> 0.992 / 0.987 -> 0.992; behind at 1408 (352 packs:
// 0.985-0.988 -> 0.982 / 0.988-0.989 -> 0.971-0.972) and below. One round at other row counts
// (1472 / 1536 / 1600 / 1792, softmax): 49152 rows 0.989 -> 0.993 / 0.998 -> 1.004 / 0.984 ->
// 0.991 / 0.988 -> 0.993 (log_softmax 1600 and 1792 +0.5-0.6%, 1472 -0.8%), 196608 +0.1-1.0%;
// 32768 rows -0.6% to +0.8%, and 4096-16384 rows mostly behind (4096: up to -4.5%). The ragged
// kernel runs them (aligned rows measured 0.1% ahead of the lab's whole-rows kernel at 1536).
// An H100 keeps its rules (above), where 224 x 2 was not measured. (NOTES.md, item 91.)
template <Algorithm kAlgorithm>
constexpr int64_t kWideDramFloat224x2LeastPacks = kAlgorithm == Algorithm::kSoftmax ? 368 : 400;
constexpr int64_t kWideDramFloat224x2MostPacks = 448;
constexpr int64_t kWideDramFloat224x2MinRowsPerSm = 360;

// float rows of 1400-1535 window packs (5597-6140 aligned columns) on 512 x 4 and of 2500-3071
// (9997-12284) on 512 x 8 where the DRAM is wide (an H200), instead of block_smem: 68% and 61%
// full, below kFloatShapes' three quarters. Measured on an H200 (tools/softmax_lab.cu, 2^27 /
// cols rows, registers=512x4 and registers=512x8 against the plan, one round, 100 calls,
// fractions of copy, softmax / log_softmax): 5600 columns 0.967 -> 0.991 / 0.972 -> 0.991, 5800
// 0.960 -> 0.994 / 0.964 -> 0.993, 6000 0.961-0.963 -> 0.995 / 0.966 -> 0.996 (Triton's kernel,
// 512 threads of 16 values, 0.994), 10000 0.962-0.964 -> 0.981-0.982 / 0.965 -> 0.980 (Triton
// 0.989), 10800 0.960 -> 0.987 / 0.961 -> 0.980, 11600 0.957 -> 0.982 / 0.961 -> 0.976, 12000
// 0.958 -> 0.983 (Triton 0.978); level at 5200 (1300 packs: 0.964 -> 0.971 / 0.969 -> 0.971) and
// behind below it (4800: 0.977 -> 0.950) and below 2500 packs (9200: 0.964 -> 0.959, 8400: 0.964
// -> 0.930). Fewer rows, and the H100, were not measured; the H100 keeps block_smem there.
// (NOTES.md, item 92.)
constexpr int64_t kWideDramFloat512x4LeastPacks = 1400;
constexpr int64_t kWideDramFloat512x8LeastPacks = 2500;

// float rows of 3968-4096 window packs (15869-16384 aligned columns) on 1024 x 4 instead of 512
// x 8 where the DRAM is narrow, from 16 rows an SM. Measured on an H100 (tools/softmax_lab.cu,
// 2^27 / cols rows, registers=1024x4 against the plan, fractions of copy, softmax / log_softmax):
// 16384 columns 0.990-0.992 -> 1.005-1.007 / 0.992-0.993 -> 1.004-1.005 (Triton's kernel, 512
// threads of 32 values, 0.991), 16000 0.991-0.992 -> 0.999-1.000 / 0.991 -> 0.996-0.997, 15872
// 0.983 -> 0.991 / 0.983 -> 0.986; behind at 15360 (3840 packs: 0.982 -> 0.978 / 0.983 -> 0.973),
// 14336 (0.982 -> 0.958) and 12345 (0.984 -> 0.903). With fewer rows of 16384 columns: 4096
// rows 0.988 -> 0.992, 2048 level (0.981-0.983 -> 0.983-0.984). On an H200 it lost (16384:
// 0.973 -> 0.830, item 52). (NOTES.md, item 72.)
constexpr int64_t kNarrowDramFloat1024x4LeastPacks = 3968;
constexpr int64_t kNarrowDramFloat1024x4MinRowsPerSm = 16;

// 16-bit rows of 1024 aligned columns and float rows of 512, exactly the 128 whole packs of
// 128 x 1, which the rules above put on it where the DRAM is narrow: the row comes in by one bulk
// copy (BulkLoadSoftmaxKernel) where the device and the build have it. Measured on an H100
// (tools/softmax_lab.cu, 98304 rows, 200 calls interleaved, two rounds; the plan with it against
// registers=128x1, the kernel before, softmax / log_softmax): half 1024 +0.22-0.27% / +0.20%,
// bfloat16 1024 +0.17% and -0.12% / +0.32-0.34%, float 512 +0.22-0.32% / +0.37%; against
// Triton's kernel on the same buffers, half 1.0000-1.0003, bfloat16 0.9971-0.9993, float
// 1.0010-1.0012 (the kernel before: 0.996-0.998, item 85). Rows that leave a thread without a
// pack lost with a bulk copy (half 1000: 1.001 -> 0.985 of copy) and keep 128 x 1's kernel.
// Not measured on an H200, where these rows take other shapes. (NOTES.md, item 87.) The warp
// path's one-row kernel now takes 16-bit 1024 below 1024 rows an SM, 98304 among them, 0.5%
// ahead of the bulk load there (kWarpOneRowRules).
// BulkLoadRunsOn: the device has the copy engine's bulk copies (sm_90 on) and this build compiled
// the kernel for them (its PTX architecture 90 or later; a build for older architectures only
// has an empty kernel).
inline bool BulkLoadRunsOn(const void* kernel, const CudaDeviceInfo& info) {
  return info.major >= 9 && KernelPtxVersion(kernel, info) >= 90;
}

inline bool ReadAheadRunsOn(const void* kernel, const CudaDeviceInfo& info) {
  return !NarrowDram(info) && info.l2_cache_bytes >= kReadAheadL2Multiple * kReadAheadBytes &&
         BulkLoadRunsOn(kernel, info);
}

// The block_registers rows that read ahead where ReadAheadRunsOn (`kernel`: the shape's copy that
// does): rows of kReadAheadLeastPacks window packs or more on the shapes that have such a copy
// (kReadAheadShape: float's of fewer than 1024 threads). Measured on an H200 (tools/softmax_lab.cu,
// the plan against ahead=off, two rounds; softmax, fractions of copy): 2048 columns 0.983 ->
// 1.003-1.004 (log_softmax 0.985-0.986 -> 0.999), 2560 0.978-0.979 -> 0.989, 3072 0.978-0.979 ->
// 0.987-0.993, 4096 0.996-0.997 -> 1.004-1.005, 8192 0.983 -> 0.996-0.997 (log_softmax 0.982 ->
// 0.994-0.995), 12345 0.978-0.979 -> 0.988-0.989, 16384 0.979-0.980 -> 1.000; behind at 2049
// (256 x 3, two thirds full), 0.991-0.995 -> 0.987-0.993; 32768 on 1024 x 8 behind, 0.981 ->
// 0.964-0.965, so 1024 threads have no such copy. (NOTES.md, item 98.)
inline bool ReadsAheadPlanned(const void* kernel, const CudaDeviceInfo& info, int64_t window) {
  return window >= kReadAheadLeastPacks && ReadAheadRunsOn(kernel, info);
}

// block_smem's plan of `active` blocks an SM moved onto the kernel's copy that reads ahead, for
// the rows of kBlockSmemReadAheadCopy's rule: 16-bit softmax on kBlockSmemReadAheadBlock threads,
// windows of up to kBlockSmemReadAheadMostPacks packs, rows of whole 128-byte lines from a
// 16-byte boundary (`x_aligned`; LaunchBlock asks for the line), and as many blocks of that copy
// an SM. The plan is left as it is elsewhere.
template <typename T, Algorithm kAlgorithm>
void PlanBlockSmemReadAhead(const CudaDeviceInfo& info, int64_t cols, bool x_aligned, int active,
                            Plan& plan) {
  if constexpr (kBlockSmemReadAheadCopy<T, kAlgorithm>) {
    constexpr int kBlock = kBlockSmemReadAheadBlock;
    const auto* kernel = reinterpret_cast<const void*>(
        &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, 0, true>);
    if (!x_aligned || plan.block != kBlock || plan.cached_packs > kBlockSmemReadAheadMostPacks ||
        cols * static_cast<int64_t>(sizeof(T)) % kLineBytes != 0 ||
        !ReadAheadRunsOn(kernel, info) || plan.smem > MaxDynamicSmem(kernel, info) ||
        MaxActiveBlocksPerSm(kernel, info, kBlock, plan.smem) != active) {
      return;
    }
    plan.read_ahead = true;
    plan.launch = &LaunchBlock<T, kAlgorithm, kBlock, true, true, T, 0, true>;
  }
}

// The rules above, each giving windows of `least` to `most` packs a block_registers shape other
// than their range's (kFloatShapes, k16BitShapes, or none): where the DRAM is narrow or wide
// (NarrowDram), for rows of whole packs only where they say so, and once the launch has
// `min_rows_per_sm` rows an SM. Each rule's measurements are at its constants. No two rules of a
// dtype take the same window on the same DRAM (RulesKeepApart), so their order does not matter.
// The columns named are those of rows on a 16-byte boundary (docs/cuda/block_registers.md
// tabulates the rules).
enum class Dram { kNarrow, kWide };
struct RegistersRule {
  Dram dram;
  bool whole_rows_only;
  int64_t least;
  int64_t most;
  int64_t min_rows_per_sm;
  int block;
  int packs;
};
constexpr RegistersRule k16BitRules[] = {
    // 14329-16384 columns: Triton's 32 values a thread.
    {Dram::kNarrow, false, kNarrowDram512x4LeastPacks, 512 * 4, 0, 512, 4},
    // 960-1024 columns: a pack a thread where the DRAM is narrow, two on half the threads where
    // it is wide.
    {Dram::kNarrow, true, k16BitSmallLeastPacks, 128, k16BitSmallMinRowsPerSm, 128, 1},
    {Dram::kWide, true, k16BitSmallLeastPacks, 128, k16BitSmallMinRowsPerSm, 64, 2},
    // 1536-2048 columns.
    {Dram::kNarrow, true, k16BitPairsLeastPacks, 128 * 2, k16BitPairsMinRowsPerSm, 128, 2},
};
template <Algorithm kAlgorithm>
constexpr RegistersRule kFloatRules[] = {
    // 512 columns: a pack a thread.
    {Dram::kNarrow, true, 128, 128, kFloat128x1MinRowsPerSm, 128, 1},
    // 516-764 columns: two warps of 3 packs, not one warp of 6.
    {Dram::kWide, true, kWideDramFloat64x3LeastPacks, kWideDramFloat64x3MostPacks,
     kWideDramFloat64x3MinRowsPerSm, 64, 3},
    // 1025-1792 columns: more threads of fewer packs.
    {Dram::kNarrow, false, 257, kNarrowDramFloat256x2LeastPacks - 1,
     kNarrowDramFloatPairsMinRowsPerSm, 192, 2},
    {Dram::kNarrow, false, kNarrowDramFloat256x2LeastPacks, kNarrowDramFloatPairsMostPacks,
     kNarrowDramFloatPairsMinRowsPerSm, 256, 2},
    // 1469-1792 columns (log_softmax from 1597): seven warps a row at 9 blocks an SM.
    {Dram::kWide, false, kWideDramFloat224x2LeastPacks<kAlgorithm>, kWideDramFloat224x2MostPacks,
     kWideDramFloat224x2MinRowsPerSm, 224, 2},
    // 3648-3964 columns: the whole-rows kernel on 512 x 2, not 256 x 4.
    {Dram::kWide, true, kWideDramFloat512x2LeastPacks, kWideDramFloat512x2MostPacks,
     kWideDramFloat512x2MinRowsPerSm, 512, 2},
    // 5597-6140 and 9997-12284 columns: shapes a little less full than three quarters.
    {Dram::kWide, false, kWideDramFloat512x4LeastPacks, 1535, 0, 512, 4},
    {Dram::kWide, false, kWideDramFloat512x8LeastPacks, 3071, 0, 512, 8},
    // 15869-16384 columns: 1024 x 4, not 512 x 8.
    {Dram::kNarrow, false, kNarrowDramFloat1024x4LeastPacks, 1024 * 4,
     kNarrowDramFloat1024x4MinRowsPerSm, 1024, 4},
};

template <size_t N>
constexpr bool RulesKeepApart(const RegistersRule (&rules)[N]) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = i + 1; j < N; ++j) {
      const RegistersRule& a = rules[i];
      const RegistersRule& b = rules[j];
      if (a.dram == b.dram && a.least <= b.most && b.least <= a.most) { return false; }
    }
  }
  return true;
}
static_assert(RulesKeepApart(k16BitRules) && RulesKeepApart(kFloatRules<Algorithm::kSoftmax>) &&
                  RulesKeepApart(kFloatRules<Algorithm::kLogSoftmax>),
              "no two block_registers rules take the same window on the same DRAM");

// A block_registers launch shape: `block` threads of `packs` packs each.
struct BlockPacks {
  int block;
  int packs;
};

// The kernel of a block a row (kOneRow) for float rows that fill a shape exactly, on a launch of
// at most kOneRowMostBytesPerSm of x an SM, where the DRAM is narrow for the SMs (NarrowDram: an
// H100): the shape each such window takes (kFloatOneRowShapes), in place of the planned shape
// and kernel. Measured on an H100 (NOTES.md item 105;
// tools/softmax_lab.cu, registers=BxN/one against the plan and Triton's kernel, float softmax,
// fractions of copy; plan -> one row):
//  * 768 columns on 64 x 3: 2112 rows 0.926-0.943 -> 0.955-0.964, 8192 0.990-0.994 ->
//    1.030-1.032, 16384 1.002-1.005 -> 1.033-1.039, 98304 1.000 -> 1.001-1.002;
//  * 1024 on 128 x 2: 2112 0.976 -> 0.996-1.004, 8192 1.017-1.020 -> 1.036-1.038, 16384
//    0.984-0.990 -> 1.001, 49152 0.995-0.996 -> 0.998-0.999, 98304 0.997 -> 0.996-0.997;
//  * 1536 on 128 x 3: 2112 0.949-0.953 -> 0.994-1.006, 8192 1.005-1.008 -> 1.036-1.040, 16384
//    1.003-1.005 -> 1.021-1.024, 49152 0.999-1.000 -> 1.002-1.003; 98304 1.004-1.005 ->
//    1.001-1.002, where the plan's 256 x 2 on the largest carve-out stays;
//  * 2048 on 128 x 4: 2112 0.974-0.982 -> 0.982-0.985, 8192 1.006-1.007 -> 1.033-1.036, 16384
//    1.005-1.006 -> 1.018-1.019; 98304 0.999 -> 0.997;
//  * 4096 on 256 x 4: 2112 1.027-1.030 -> 1.049-1.052, 8192 1.006 -> 1.015, 16384 1.000 ->
//    1.006-1.007; 32768 1.009-1.010 -> 1.007.
// The other shapes each width took measured behind these (192 x 1, 192 x 2, 256 x 2, 512 x 2),
// and so did 512 columns on 128 x 1 from 8192 rows (the bulk load's kernel and the warp path
// keep them). The bound lies between 2.2 MiB an SM (1536 columns at 49152 rows, ahead) and 2.9
// (1024 at 98304, level; 1536 and 2048 behind from 4.4). Where the DRAM is wide (an H200) it is
// not measured, and the planner keeps its shapes there.
struct OneRowShape {
  int64_t window;
  BlockPacks shape;
};
constexpr OneRowShape kFloatOneRowShapes[] = {
    {192, {64, 3}}, {256, {128, 2}}, {384, {128, 3}}, {512, {128, 4}}, {1024, {256, 4}}};
constexpr int64_t kOneRowMostBytesPerSm = int64_t{5} * 1024 * 1024 / 2;

// The one-row shape of a window of whole packs, or {0, 0} where it has none.
template <typename T>
constexpr BlockPacks OneRowShapeOf(int64_t window) {
  if constexpr (std::is_same_v<T, float>) {
    for (const OneRowShape& entry : kFloatOneRowShapes) {
      if (entry.window == window) { return entry.shape; }
    }
  }
  return BlockPacks{0, 0};
}
// Whether this build has kBlock x kPacks's one-row kernel: the planner's shapes, in the lab
// every shape's.
template <typename T>
constexpr bool BuildsOneRowKernel(int block, int packs) {
#ifdef ONEFLITE_SOFTMAX_LAB
  return !std::is_same_v<T, double>;
#else
  if constexpr (std::is_same_v<T, float>) {
    for (const OneRowShape& entry : kFloatOneRowShapes) {
      if (entry.shape.block == block && entry.shape.packs == packs) { return true; }
    }
  }
  return false;
#endif
}

// The block_registers shape that PlanBlockRegisters gives a window of its own accord: the rule's
// that takes it, else its range's; {0, 0} where neither takes it.
template <typename T, Algorithm kAlgorithm>
BlockPacks PlannedRegistersShape(bool narrow_dram, bool whole_rows, int64_t window, int64_t rows,
                                 int sm_count) {
  auto pick = [&](const auto& rules, const auto& shapes) {
    for (const RegistersRule& rule : rules) {
      if ((rule.dram == Dram::kNarrow) == narrow_dram && (whole_rows || !rule.whole_rows_only) &&
          window >= rule.least && window <= rule.most && rows >= rule.min_rows_per_sm * sm_count) {
        return BlockPacks{rule.block, rule.packs};
      }
    }
    for (const RegistersShape& shape : shapes) {
      if (window >= shape.least && window <= shape.most) {
        return BlockPacks{shape.block, shape.packs};
      }
    }
    return BlockPacks{0, 0};
  };
  if constexpr (kIs16Bit<T>) {
    return pick(k16BitRules, k16BitShapes<T>);
  } else {
    return pick(kFloatRules<kAlgorithm>, kFloatShapes);
  }
}

// Fills `plan` for block_registers with `block` threads of `packs` packs each, or (block = 0)
// with the shape a rule gives the window or else its range's (PlannedRegistersShape: k16BitRules
// and kFloatRules; kFloatShapes and k16BitShapes).
// False when no shape takes the row, the shape does not hold it, or a thread would hold more than
// 32 values (1024 threads have 64 registers each).
//
// The 16-bit shapes of 16 values a thread, in 32 registers, let 2048 threads share an SM:
// 256 x 2 packs at 4096 cols 0.968-0.969x copy (block_smem 0.917-0.923) and 512 x 2 at 8192
// 0.973-0.977 (0.951-0.954; both ops, half and bfloat16, H200). 32 values a thread on 512
// threads lost on an H200 (512 x 4 at 16384: 0.91-0.92 against 0.95) and won on an H100
// (kNarrowDramGBpsPerSm); on 128 threads they won (above).
//
// The shapes, measured on an H200 against the path that had the row before (tools/softmax_lab.cu,
// registers=BxN; float, fractions of copy): 128 x 2 packs at 768 cols 1.001 (warp 0.985) and at
// 1024 0.997 (0.982); 128 x 4 at 1536 0.988 (0.976; log_softmax 0.998 against 0.943) and at
// 2048 level (0.980); 256 x 4 at 3072 0.983 (block_smem 0.978), 512 x 4 at 8192 0.977 (0.956),
// 512 x 8 at 12345 0.979 (0.918) and at 16384 0.975 (0.972), 1024 x 8 at 32768 0.961
// (block_online 0.926). Rows that fill less of a shape measured slower: 512 cols on 128 x 2
// 0.816 (warp 0.981), 5000 on 512 x 4 0.928 (block_smem 0.967), 20000 on 1024 x 8 0.798
// (0.968); so did 8 values a thread on 256 or 512 threads (3072 cols on 512 x 2: 0.906; it won
// on an H100, kNarrowDramFloat512x2LeastPacks).
template <typename T, Algorithm kAlgorithm>
bool PlanBlockRegisters(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                        int block, int packs, Plan& plan,
                        RowsKernel rows_kernel = RowsKernel::kPlanned,
                        ReadAheadChoice ahead = ReadAheadChoice::kPlanned) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  const bool whole_rows = WholePackRows<T>(cols, x_aligned);
  const bool planned_shape = block == 0 && rows_kernel == RowsKernel::kPlanned;
  const bool narrow_dram = NarrowDram(info);
  if (block == 0) {
    const BlockPacks shape =
        PlannedRegistersShape<T, kAlgorithm>(narrow_dram, whole_rows, window, rows, info.sm_count);
    block = shape.block;
    packs = shape.packs;
    if (block == 0) { return false; }
    // float rows of 992-1024 packs (3968-4096 columns), 16 or more waves of them: 512 x 2,
    // which measured ahead of 256 x 4 once the launch's steady state dominates (4096 columns:
    // 0.976-0.980 -> 0.994-0.996 at 32768 rows, 0.971 -> 0.987 at 16896, 0.978 -> 0.990 at
    // 65536, level at 8448, behind below: 0.99 -> 0.90 at 1056; 4000 columns 0.983 -> 0.998;
    // softmax and log_softmax alike) and behind it on rows that fill less (3600 columns 0.983
    // -> 0.968; 3900 0.980 -> 0.987), on an H200, by the ragged kernel (by the whole-rows kernel
    // the wide DRAM's aligned rows of 912-991 packs take 512 x 2 above); where the DRAM is
    // narrow, from 704 packs (kNarrowDramFloat512x2LeastPacks). Full rows of other lengths did
    // not gain from fewer values a thread on more threads (2048 columns on 256 x 2, 8192 on 1024
    // x 2, 16384 on 1024 x 4).
    if constexpr (std::is_same_v<T, float>) {
      const bool full = 32 * window >= 31 * 1024;
      if (block == 256 && (full || (narrow_dram && window >= kNarrowDramFloat512x2LeastPacks))) {
        const int64_t waves = full ? 16 : kNarrowDramFloat512x2MinWaves;
        const auto* kernel =
            reinterpret_cast<const void*>(&BlockRegisterSoftmaxKernel<T, kAlgorithm, 512, 2>);
        if (rows >= waves * ResidentBlocks(info, MaxActiveBlocksPerSm(kernel, info, 512, 0))) {
          block = 512;
          packs = 2;
        }
      }
    }
    // Rows that fill a one-row shape, on a launch short enough, where the DRAM is narrow
    // (kFloatOneRowShapes).
    const BlockPacks one = OneRowShapeOf<T>(window);
    if (rows_kernel == RowsKernel::kPlanned && narrow_dram && whole_rows && one.block != 0 &&
        rows <= kMaxGridBlocks &&
        rows * cols * static_cast<int64_t>(sizeof(T)) <= kOneRowMostBytesPerSm * info.sm_count) {
      block = one.block;
      packs = one.packs;
      rows_kernel = RowsKernel::kOneRow;
    }
  }
  bool chosen = false;
  auto consider = [&](auto block_tag, auto packs_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    if constexpr (kPacks * P <= 32 && !std::is_same_v<T, double>) {
      if (kBlock != block || kPacks != packs || int64_t{kBlock} * kPacks < window) { return; }
      chosen = true;
      // The plan on the kernels' copies that read ahead (kAhead) or on the others.
      auto fill = [&](auto ahead_tag) {
        constexpr bool kAhead = decltype(ahead_tag)::value;
        const void* kernel = reinterpret_cast<const void*>(
            &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true,
                                        StoreFallback::kElements, Carveout::kDefault, kAhead>);
        // The kernel's copy that prefers the largest carve-out, where the shape has one.
        const void* max_shared_kernel = nullptr;
        if constexpr (kMaxSharedShape<T, kBlock, kPacks> && !kAhead) {
          max_shared_kernel = reinterpret_cast<const void*>(
              &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true,
                                          StoreFallback::kElements, Carveout::kMaxShared>);
        }
        plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, true,
                                            StoreFallback::kElements, Carveout::kDefault, kAhead>;
        plan.ragged = true;
        const bool planned_whole =
            rows_kernel == RowsKernel::kPlanned &&
            PlansWholeRowsKernel<T>(
                kBlock, kPacks, window,
                Plans512x2WholeRows<T>(narrow_dram, rows, info.sm_count, window));
        if (whole_rows && (rows_kernel == RowsKernel::kWhole || planned_whole)) {
          WithWholeRowsKernel<T, kBlock, kPacks>(
              WholeRowsFallback<T>(kBlock, kPacks, window), [&](auto fallback_tag) {
                constexpr StoreFallback kFallback = decltype(fallback_tag)::value;
                kernel = reinterpret_cast<const void*>(
                    &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, false,
                                                kFallback, Carveout::kDefault, kAhead>);
                if constexpr (kMaxSharedShape<T, kBlock, kPacks> && !kAhead) {
                  max_shared_kernel = reinterpret_cast<const void*>(
                      &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, false,
                                                  kFallback, Carveout::kMaxShared>);
                }
                plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, false,
                                                    kFallback, Carveout::kDefault, kAhead>;
                plan.ragged = false;
              });
        }
        plan.one_row = false;
        if constexpr (!kAhead && BuildsOneRowKernel<T>(kBlock, kPacks)) {
          if (rows_kernel == RowsKernel::kOneRow && whole_rows &&
              window == int64_t{kBlock} * kPacks && rows <= kMaxGridBlocks) {
            kernel = reinterpret_cast<const void*>(
                &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, false,
                                            StoreFallback::kNone, Carveout::kDefault, false, true>);
            max_shared_kernel = nullptr;  // its own preference: the default carve-out
            plan.launch =
                &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, false,
                                      StoreFallback::kNone, Carveout::kDefault, false, true>;
            plan.ragged = false;
            plan.one_row = true;
          }
        }
        plan.path = Path::kBlockRegisters;
        plan.pack = P;
        plan.block = kBlock;
        plan.cols_per_thread = kPacks * P;
        plan.smem = 0;
        plan.held_per_sm = 0;
        plan.max_l1 = false;
        plan.max_shared = false;
        plan.bulk_load = false;
        plan.read_ahead = kAhead;
        if constexpr (kBlock == 128 && kPacks == 1) {
          const auto* bulk =
              reinterpret_cast<const void*>(&BulkLoadSoftmaxKernel<T, kAlgorithm, kBlock>);
          if (planned_shape && whole_rows && window == kBlock && rows <= kMaxGridBlocks &&
              BulkLoadRunsOn(bulk, info)) {
            kernel = bulk;
            plan.launch = &LaunchBulkLoad<T, kAlgorithm, kBlock>;
            plan.ragged = false;
            plan.one_row = false;
            plan.bulk_load = true;
          }
        }
        int active = MaxActiveBlocksPerSm(kernel, info, kBlock, 0);
        if (max_shared_kernel != nullptr && window >= kMaxSharedLeastWindow<T, kBlock, kPacks> &&
            PreferMaxShared(info, rows, cols * static_cast<int64_t>(sizeof(T)), active)) {
          // The copy runs as many blocks an SM as the default one, or not at all.
          plan.max_shared = CarveoutBlocksPerSm(max_shared_kernel, info, kBlock,
                                                cudaSharedmemCarveoutMaxShared) == active;
        }
        if constexpr (std::is_same_v<T, float> && kBlock == 512 && kPacks == 4) {
          HoldFloat512x4(kernel, info, rows, active, plan);
        }
        if constexpr (std::is_same_v<T, float> && kBlock == 128 && kPacks == 4) {
          const auto* held = reinterpret_cast<const void*>(
              &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true,
                                          StoreFallback::kElements, Carveout::kMaxL1, kAhead>);
          if (plan.ragged && !plan.max_shared &&
              HoldFloat128x4(held, info, rows, window, active, plan)) {
            plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, true,
                                                StoreFallback::kElements, Carveout::kMaxL1, kAhead>;
          }
        }
        SetGrid(plan, rows, info, active, /*persistent=*/false);
      };
      if constexpr (kReadAheadShape<T, kBlock, kPacks>) {
        const auto* ahead_kernel = reinterpret_cast<const void*>(
            &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true,
                                        StoreFallback::kElements, Carveout::kDefault, true>);
        if (ahead == ReadAheadChoice::kOn ||
            (ahead == ReadAheadChoice::kPlanned && ReadsAheadPlanned(ahead_kernel, info, window))) {
          fill(std::true_type{});
          return;
        }
      }
      fill(std::false_type{});
    }
  };
  // The shapes above, and others for the lab's comparison.
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 3>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 3>{});
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 1>{});
  if constexpr (kIs16Bit<T>) {
    consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 2>{});
  }
  if constexpr (std::is_same_v<T, float>) {
    consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 3>{});
    consider(std::integral_constant<int, 192>{}, std::integral_constant<int, 2>{});
    consider(std::integral_constant<int, 224>{}, std::integral_constant<int, 2>{});
    consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 4>{});
  }
#ifdef ONEFLITE_SOFTMAX_LAB
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 1>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 1>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
  if constexpr (!std::is_same_v<T, float>) {
    consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 4>{});
  }
  if constexpr (!std::is_same_v<T, float>) {
    consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 3>{});
  }
  consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 6>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 96>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 96>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 192>{}, std::integral_constant<int, 1>{});
  if constexpr (!std::is_same_v<T, float>) {
    consider(std::integral_constant<int, 192>{}, std::integral_constant<int, 2>{});
  }
  consider(std::integral_constant<int, 384>{}, std::integral_constant<int, 1>{});
  if constexpr (!kIs16Bit<T>) {
    consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 2>{});
  }
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 1>{});
  if constexpr (!std::is_same_v<T, float>) {
    consider(std::integral_constant<int, 224>{}, std::integral_constant<int, 2>{});
  }
  consider(std::integral_constant<int, 160>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 160>{}, std::integral_constant<int, 3>{});
#endif
  return chosen;
}

// Calls fn(block, packs) with integral_constant tags for each cached-tail shape the planner
// takes (PlanCachedTail): the 16-bit types' 256 x 2 and 512 x 2, float's 1024 x 8.
template <typename T, typename Fn>
void ForEachPlannedTailShape(Fn&& fn) {
  if constexpr (kIs16Bit<T>) {
    fn(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
    fn(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  } else {
    fn(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
  }
}

// Fills `plan` for block_registers with a cached tail (see BlockRegisterSoftmaxKernel): `block`
// threads of `packs` register packs each, and the rest of the row's window in shared memory, as
// many slots a thread as that takes. False when the shape's registers hold the row already, or
// its tail does not fit in the shared memory one block may take.
template <typename T, Algorithm kAlgorithm>
bool PlanRegistersTail(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                       int block, int packs, Plan& plan) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  bool chosen = false;
  auto consider = [&](auto block_tag, auto packs_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    if constexpr (kPacks * P <= 32 && !std::is_same_v<T, double>) {
      const int64_t in_registers = int64_t{kBlock} * kPacks;
      if (chosen || kBlock != block || kPacks != packs || window <= in_registers) { return; }
      const auto* kernel = reinterpret_cast<const void*>(
          &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, true>);
      const int64_t slots = (window - in_registers + kBlock - 1) / kBlock;
      const size_t smem = static_cast<size_t>(slots * kBlock) * kPackBytes;
      if (smem > MaxDynamicSmem(kernel, info)) { return; }
      chosen = true;
      plan.path = Path::kBlockRegisters;
      plan.pack = P;
      plan.block = kBlock;
      plan.cols_per_thread = kPacks * P;
      plan.ragged = true;
      plan.cached_packs = static_cast<int>(slots * kBlock);
      plan.smem = smem;
      plan.held_per_sm = 0;
      plan.max_l1 = false;
      plan.max_shared = false;
      plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, true>;
      SetGrid(plan, rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, smem),
              /*persistent=*/false);
    }
  };
  // The planner's shapes, and others for the lab's comparison.
  ForEachPlannedTailShape<T>(consider);
#ifdef ONEFLITE_SOFTMAX_LAB
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
#endif
  return chosen;
}

// block_registers with a cached tail (PlanRegistersTail), for the rows where it measured ahead
// of the plan the rest of PlanSoftmax makes. On an H200 (tools/softmax_lab.cu, tail=BxN against
// that plan; fractions of copy, softmax / log_softmax, half and bfloat16 alike within 1-2%):
//  * 16-bit rows of 1281-2048 packs (10241-16384 columns), where block_smem gives 128 threads
//    11-16 packs each, from 1537 packs (12289 columns) for rows off a 16-byte boundary: 256
//    threads of 2 register packs. 11000 columns 0.928 -> 0.964, 12000 0.958 -> 0.986, 12345
//    0.912 -> 0.963 / 0.917 -> 0.964, 14001 0.906 -> 0.962; level at 9000-10248, 16384 and
//    20000; behind at 8500 (0.938 -> 0.885) and 6000 (0.995 -> 0.803), where a thread has too
//    few packs in flight, and for rows off a boundary up to about 11000 columns (10241 0.916 ->
//    0.834, 11001 0.923 -> 0.896).
//  * 16-bit softmax rows that block_smem gives 512 threads (3457 packs, 27657 columns, and up):
//    256 threads of 2 register packs again, up to 3712 packs (29696 columns), and for bfloat16
//    up to 4608 (36864). bfloat16 28672 0.858 -> 0.923, 29696 0.892 -> 0.948, 30720-36864
//    0.881-0.905 -> 0.915-0.929 (+1.5-4.6%); half 28672 0.891 -> 0.924, 29696 0.922 -> 0.945,
//    and from 32768 behind (0.936 -> 0.923). log_softmax, which needs no second exp, kept
//    block_smem: behind from 30720 (-0.2 to -3.4%), +0.2-2.7% at 28672-29696 (NOTES item 58).
//  * 16-bit rows that block_smem could give only one block an SM (PlanTwoPerSm's), while two
//    blocks of 512 threads of 2 register packs fit: bfloat16 65536 0.894 -> 0.922 / 0.913 ->
//    0.932, half 0.916 -> 0.929, 60000 +1%. Past that (65535 columns, one block an SM) 0.865 ->
//    0.759.
//  * float rows of at least 9 x 1024 packs (36864 columns), a tail slot a thread or more: 1024
//    threads of 8 register packs, one block an SM. 45000 0.832 -> 0.932, 49152 0.817 -> 0.911,
//    57344 0.783 -> 0.903, 81920 0.800 -> 0.888, 90000 0.760 -> 0.859 (log_softmax up to 0.03
//    more); 40001 level / +3%. Except where block_online's one block holds the row on chip (its
//    shared memory and held packs; float 58049-66240 columns): 65536 0.927 against 0.901-0.910.
//    Below 9 x 1024 packs the tail lost (33000 columns 0.947 -> 0.899).
template <typename T, Algorithm kAlgorithm>
bool PlanCachedTail(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                    Plan& plan) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
    if constexpr (kIs16Bit<T>) {
      const bool rows_aligned = WholePackRows<T>(cols, x_aligned);
      if (window > (rows_aligned ? 10 : 12) * 128 && window <= 16 * 128) {
        return PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 256, 2, plan);
      }
      // softmax rows that block_smem would give 512 threads of 7-9 packs (from 3457 packs):
      // 256 x 2 up to 29 x 128 packs, and bfloat16's up to 36 x 128.
      constexpr int64_t kLastSoftmaxTail =
          (std::is_same_v<T, __nv_bfloat16> ? 36 : 29) * int64_t{128};
      if (kAlgorithm == Algorithm::kSoftmax && window > 27 * 128 && window <= kLastSoftmaxTail) {
        return PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 256, 2, plan);
      }
      // 512 x 2 only while two of its blocks fit on an SM.
      const bool one_block = window * kPackBytes > info.max_shared_memory_per_sm / 2;
      Plan tail = plan;
      if (!one_block ||
          !PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 512, 2, tail) ||
          tail.active_per_sm < 2) {
        return false;
      }
      plan = tail;
      return true;
    } else {
      constexpr int kBlock = kMaxBlockSize<T>;
      const auto* online = reinterpret_cast<const void*>(
          &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
      const int64_t cached = static_cast<int64_t>(MaxDynamicSmem(online, info) / kPackBytes);
      const bool online_holds_row =
          window > cached && window <= cached + int64_t{kOnlineHeldPacks} * kBlock;
      return window >= 9 * 1024 && !online_holds_row &&
             PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 1024, 8, plan);
    }
  }
}

// Rows of exactly `width` lanes (32, or 16: two rows a warp) times `packs` 16-byte packs from a
// 16-byte boundary, where the DRAM is narrow for the SMs (NarrowDram: an H100), take the warp
// path's kernel of a group a row (kOneRow in WarpSoftmaxKernel) in place of the rung's kernel of
// the row loop, or of block_registers' 128 x 1 below `most_rows_per_sm` (0: no bound). PlanPath
// asks PlanWarpOneRow before PlanBlockRegisters, so the bounds are where 128 x 1 takes the rows
// from. Measured on an H100 (tools/softmax_lab.cu, one=off or one=N[/16] against the plan, or a
// kernel of nothing but the row, two rounds, fractions of copy, softmax / log_softmax; NOTES.md
// items 106-108):
//  * float 256 (2 packs): 8192 rows 1.004 -> 1.008-1.012 / 0.984-1.004 -> 1.000-1.008, 32768
//    1.023-1.025 -> 1.036-1.039 / 1.022-1.023 -> 1.037, 98304 1.004-1.005 -> 1.009 / 1.003-1.005
//    -> 1.007-1.008, 393216 0.996 -> 0.997 / 0.995-0.996 -> 0.997-0.998;
//  * float 384 (3): 8192 0.975 -> 0.987 / 0.962 -> 0.974 (one round), 32768 1.013-1.014 ->
//    1.025-1.026 / 1.013 -> 1.025-1.027, 98304 1.002 -> 1.005-1.007 / 1.003 -> 1.006-1.007,
//    196608 0.998 -> 1.000 / 0.999 -> 1.001 (one round);
//  * float 512 (4), below kFloat128x1MinRowsPerSm: 8192 0.971-0.973 -> 0.987 / 0.963-0.966 ->
//    0.963-0.971, 32768 1.000-1.002 -> 1.008-1.009 / 1.001-1.002 -> 1.014-1.015;
//  * 16-bit 256 (1), log_softmax only, half / bfloat16: 8192 0.923-0.924 -> 0.953 / 0.929-0.933
//    -> 0.953, 16384 0.924-0.928 -> 0.968-0.972 / 0.917-0.918 -> 0.968-0.969, 32768 0.948-0.951
//    -> 0.971-0.974 / 0.946-0.948 -> 0.976-0.979, 98304 0.993 -> 0.996-0.999 / 0.992 ->
//    0.995-0.999, 196608 0.998-0.999 -> 0.998-1.000 / 1.000 -> 0.998-0.999; softmax, whose rung
//    (16 x 2) runs nearer copy, gained at 8192 rows (0.920-0.939 -> 0.948-0.959) but lost at
//    16384 (0.972-0.988 -> 0.965-0.973) and was level from there, so it keeps the rung's kernel;
//  * 16-bit 512 (2), half / bfloat16 alike: 32768 1.008-1.012 -> 1.036-1.039, 98304
//    0.998-1.001 -> 1.006-1.011;
//  * 16-bit 1024 (4), below k16BitOneRowMostRowsPerSm: 32768 (the rung's kernel) 0.991-0.995 ->
//    1.002-1.008, 49152 (the same) 0.998-1.006 -> 1.004-1.015, 98304 (128 x 1's bulk load)
//    0.994-0.996 -> 0.998-1.000, with Triton's kernel at 1.000-1.005 and 0.995; at 196608 rows
//    the bulk load led, 0.999-1.002 -> 0.995-0.997;
//  * 16-bit 128 (16 lanes of 1 pack), half and bfloat16, against the 16 x 1 rung's two rows a
//    group, by the lab's kernel of nothing but the row (warprow=1x16/16, item 108): 8192 rows
//    0.921-0.955 -> 0.968-1.007 / 0.931-0.969 -> 0.961-1.027, 32768 0.939-0.954 -> 0.969-0.980 /
//    0.938-0.954 -> 0.972-0.988, 98304 0.992-0.998 -> 1.008-1.014 / 0.990-1.000 -> 1.004-1.014,
//    196608 0.989-0.993 -> 0.995-0.997 / 0.991-0.993 -> 0.995-0.999;
//  * float 128 (16 lanes of 2 packs), against the 16 x 2 rung (warprow=2x16/16): 8192 rows
//    0.913-0.915 -> 0.942-0.943 / 0.899-0.905 -> 0.937-0.943, 32768 0.958-0.966 -> 0.987-0.989 /
//    0.968-0.971 -> 0.976-0.987, 98304 0.994-0.996 -> 1.005 / 0.994-0.998 -> 1.002-1.004,
//    196608 1.000-1.004 -> 1.005-1.011 / 1.002 -> 1.006-1.007. float 64 on 16 lanes of one pack
//    gained 3-9% at 8192 rows but lost 1-2% at 32768, so it keeps its rung.
// Where the DRAM is wide (an H200) none is measured, and the planner keeps its plans there.
struct WarpOneRowRule {
  int width;  // lanes a row: 32 (a warp) or 16 (two rows a warp); 0: no rule
  bool is_16bit;
  int packs;
  bool log_softmax_only;
  int64_t most_rows_per_sm;  // rows below this many an SM; 0: any count
};
// The bound for 16-bit rows of 1024 columns lies between 745 rows an SM (98304 rows on 132
// SMs: ahead) and 1489 (behind).
constexpr int64_t k16BitOneRowMostRowsPerSm = 1024;
constexpr WarpOneRowRule kWarpOneRowRules[] = {
    {16, false, 2, false, 0},                         // float 128
    {32, false, 2, false, 0},                         // float 256
    {32, false, 3, false, 0},                         // float 384
    {32, false, 4, false, kFloat128x1MinRowsPerSm},   // float 512
    {16, true, 1, false, 0},                          // 16-bit 128
    {32, true, 1, true, 0},                           // 16-bit 256, log_softmax
    {32, true, 2, false, 0},                          // 16-bit 512
    {32, true, 4, false, k16BitOneRowMostRowsPerSm},  // 16-bit 1024
};
// The lanes and packs a lane the one-row kernel is built for (in the lab, for any dtype: one=N
// and one=N/16).
struct WarpOneRowShape {
  int width;
  int packs;
};
constexpr WarpOneRowShape kWarpOneRowShapes[] = {{32, 1}, {32, 2}, {32, 3},
                                                 {32, 4}, {16, 1}, {16, 2}};

// The rule for rows of `width` x `packs` packs of T, or one of width 0 where there is none.
template <typename T, Algorithm kAlgorithm>
constexpr WarpOneRowRule WarpOneRowRuleOf(int width, int packs) {
  if constexpr (std::is_same_v<T, float> || kIs16Bit<T>) {
    for (const WarpOneRowRule& rule : kWarpOneRowRules) {
      if (rule.width == width && rule.is_16bit == kIs16Bit<T> && rule.packs == packs &&
          (!rule.log_softmax_only || kAlgorithm == Algorithm::kLogSoftmax)) {
        return rule;
      }
    }
  }
  return WarpOneRowRule{};
}

// Calls fn(std::integral_constant<int, width>, std::integral_constant<int, packs>) for each of
// kWarpOneRowShapes.
template <typename Fn, size_t... kIs>
void ForEachWarpOneRowShapeOf(Fn&& fn, std::index_sequence<kIs...>) {
  (fn(std::integral_constant<int, kWarpOneRowShapes[kIs].width>{},
      std::integral_constant<int, kWarpOneRowShapes[kIs].packs>{}),
   ...);
}
template <typename Fn>
void ForEachWarpOneRowShape(Fn&& fn) {
  ForEachWarpOneRowShapeOf(fn, std::make_index_sequence<std::size(kWarpOneRowShapes)>{});
}

// Fills `plan` with the kWidth x kPacks rung on its one-row kernel (for PlanWarpOneRow, and the
// lab's one=N[/16] on any rows it is asked for).
template <typename T, Algorithm kAlgorithm, int kWidth, int kPacks>
void PlanWarpOneRowRung(const CudaDeviceInfo& info, int64_t rows, Plan& plan) {
  using Shape = WarpShape<kWidth, kPacks, kPackBytes, 1>;
  PlanWarp<T, kAlgorithm, Shape>(info, rows, /*ragged=*/false, plan, ReadAheadChoice::kOff);
  const auto* kernel = reinterpret_cast<const void*>(
      &WarpSoftmaxKernel<T, kAlgorithm, kWidth, kPacks, false, kPackBytes, 1, false, true>);
  SetGrid(plan, plan.tiles, info, MaxActiveBlocksPerSm(kernel, info, kWarpBlockSize, 0),
          /*persistent=*/false);
  plan.launch = &LaunchWarp<T, kAlgorithm, Shape, false, false, true>;
  plan.one_row = true;
}

// Fills `plan` with the one-row warp kernel where kWarpOneRowRules takes the rows; false
// elsewhere.
template <typename T, Algorithm kAlgorithm>
bool PlanWarpOneRow(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                    Plan& plan) {
  constexpr int P = PackSize<T>::value;
  if (!NarrowDram(info) || !WholePackRows<T>(cols, x_aligned)) { return false; }
  bool chosen = false;
  auto consider = [&](auto width_tag, auto packs_tag) {
    constexpr int kWidth = decltype(width_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    constexpr WarpOneRowRule kRule = WarpOneRowRuleOf<T, kAlgorithm>(kWidth, kPacks);
    constexpr int64_t kRowsPerBlock = kWarpBlockSize / kWidth;
    if constexpr (kRule.width != 0) {
      if (cols != int64_t{kWidth} * kPacks * P ||
          (kRule.most_rows_per_sm > 0 && rows >= kRule.most_rows_per_sm * info.sm_count) ||
          (rows + kRowsPerBlock - 1) / kRowsPerBlock > kMaxGridBlocks) {
        return;
      }
      PlanWarpOneRowRung<T, kAlgorithm, kWidth, kPacks>(info, rows, plan);
      chosen = true;
    }
  };
  ForEachWarpOneRowShape(consider);
  return chosen;
}

// The one decision function: the path, its shape and its grid (PlanPath), then the stagger of
// the launch's first wave (StaggerFirstWave). `x_aligned`: x starts on a 16-byte boundary, and
// so does y (Describe, which has no pointers, assumes they do). `allow_registers` = false plans a
// shared-memory block path for any row, never the paths that hold a row in registers or stage it
// per warp (for tools/softmax_lab.cu, which compares the paths).
template <typename T, Algorithm kAlgorithm>
Plan PlanPath(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
              bool allow_registers);

template <typename T, Algorithm kAlgorithm>
Plan PlanSoftmax(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                 bool allow_registers = true) {
  Plan plan = PlanPath<T, kAlgorithm>(info, rows, cols, x_aligned, allow_registers);
  StaggerFirstWave<T>(info, cols, plan);
  return plan;
}

// The path for rows of `cols` elements, from the fastest that takes them.
template <typename T, Algorithm kAlgorithm>
Plan PlanPath(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
              bool allow_registers) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  Plan plan;
  plan.pack = P;

  // Rows that fill a 32- or 16-lane warp rung exactly, where the DRAM is narrow: a group a row,
  // with nothing but the row (PlanWarpOneRow), up to where block_registers' 128 x 1 takes them.
  if (allow_registers && PlanWarpOneRow<T, kAlgorithm>(info, rows, cols, x_aligned, plan)) {
    return plan;
  }

  // Rows that fill a block_registers shape well (see PlanBlockRegisters): a block holds the row
  // in registers, ahead of the warp path for float rows of 768 to 32768 columns and of the
  // block paths for 16-bit rows of 2297 to 6144 and 7169 to 8192 columns (k16BitShapes).
  if constexpr (!std::is_same_v<T, double>) {
    if (allow_registers &&
        PlanBlockRegisters<T, kAlgorithm>(info, rows, cols, x_aligned, 0, 0, plan)) {
      return plan;
    }
  }

  // Short rows whose word count is an odd number times a few lanes: a warp stages two tiles of
  // them through shared memory (PlanTileRows).
  if (allow_registers && x_aligned && PlanTileRows<T, kAlgorithm>(info, rows, cols, plan)) {
    return plan;
  }

  // The warp path holds a row's whole packs in its rung and its edge columns beside them.
  const int64_t whole_packs = cols / P;
  if (allow_registers && whole_packs <= MaxWarpPacks<T>()) {
    const bool ragged = !WholePackRows<T>(cols, x_aligned);
    bool chosen = false;
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFor<T, Shape>) {
        if (chosen || (ragged ? Shape::max_ragged_packs : Shape::max_packs) < whole_packs) {
          return;
        }
        chosen = true;
        const ReadAheadChoice ahead = whole_packs >= kWarpReadAheadLeastPacks
                                          ? ReadAheadChoice::kPlanned
                                          : ReadAheadChoice::kOff;
        PlanWarp<T, kAlgorithm, Shape>(info, rows, ragged, plan, ahead);
      }
    });
    return plan;
  }

  // Rows that a block_registers shape holds with a tail cached in shared memory, where that
  // measured ahead of the paths below (PlanCachedTail).
  if (allow_registers && PlanCachedTail<T, kAlgorithm>(info, rows, cols, x_aligned, plan)) {
    return plan;
  }

  // A block per row with the whole row cached; while one block waits on its copies, the SM's
  // others compute. The block size, measured on an H200 (tools/softmax_lab.cu, block=N): 128
  // threads while at least 4 such blocks fit on an SM (16 warps) and a thread owns fewer than 16
  // packs, since a small block has the least per-row overhead: 0.96x copy for float 8192 where
  // 256 threads measured 0.88x. Otherwise (long rows), the size with the most resident threads,
  // ties going to more blocks: float 16384 cols 0.87x at 256 threads (3 blocks), 0.97x at 512 (2
  // blocks); half 32768 0.83x and 0.91x; half 16384, 16 packs a thread at 128 threads, 0.926x
  // there and 0.949x at 256 (bfloat16 0.919x, 0.942x). When only one block fits, two half-size
  // blocks that cache part of the row each (PlanTwoPerSm) measured faster still.
  const size_t row_smem = static_cast<size_t>(window) * kPackBytes;
  int best_active = 0;
  int best_threads = 0;
  // 128 threads with 4 or more blocks an SM and fewer than 16 packs a thread: nothing larger is
  // tried.
  bool settled = false;
  auto consider = [&](auto block_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    const auto* kernel = reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
    if (settled || row_smem > MaxDynamicSmem(kernel, info)) { return; }
    const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, row_smem);
    const int threads = active * kBlock;
    if (active == 0 || threads < best_threads ||
        (threads == best_threads && active <= best_active)) {
      return;
    }
    best_active = active;
    best_threads = threads;
    settled = kBlock == 128 && active >= 4 && window < 16 * kBlock;
    plan.path = Path::kBlockSmem;
    plan.block = kBlock;
    plan.cached_packs = static_cast<int>(window);
    plan.smem = row_smem;
    plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
  };
  if constexpr (kIs16Bit<T>) {
    // 16-bit rows of up to kSmallBlockPacks packs on 64 threads (32 blocks an SM can hold twice
    // the rows in flight): measured on an H200 at 4096 cols half 0.89 -> 0.96x copy, bfloat16
    // 0.83 -> 0.96x; 5000 cols 0.91 -> 0.94x and 0.84 -> 0.94x. At 6144 cols (768 packs) half
    // measured 0.97x at 128 threads and 0.955x at 64.
    if (window <= kSmallBlockPacks) {
      consider(std::integral_constant<int, 64>{});
      settled = best_active > 0;
    }
  }
  ForEachBlockSize<T>(consider);
  if (best_active == 1 && PlanTwoPerSm<T, kAlgorithm>(info, rows, window, plan)) { return plan; }
  if (best_active > 0) {
    PlanBlockSmemReadAhead<T, kAlgorithm>(info, cols, x_aligned, best_active, plan);
    SetGrid(plan, rows, info, best_active, /*persistent=*/false);
    return plan;
  }

  // The row is longer than shared memory: one block of the largest size per SM caches as much
  // of it as fits, and re-reads only the rest. One row per SM at a time keeps that re-read close
  // behind the first read, so it usually hits L2.
  constexpr int kBlock = kMaxBlockSize<T>;
  const auto* kernel = reinterpret_cast<const void*>(
      &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
  plan.path = Path::kBlockOnline;
  plan.block = kBlock;
  plan.cached_packs = static_cast<int>(MaxDynamicSmem(kernel, info) / kPackBytes);
  plan.smem = static_cast<size_t>(plan.cached_packs) * kPackBytes;
  // Pass 2 stages element-wise stores of uncached packs in each thread's first slot.
  ONEFLITE_CHECK(plan.cached_packs >= kBlock, RuntimeError, "softmax: ", plan.smem,
                 " bytes of shared memory per block are too few for the block_online path");
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>;
  SetGrid(plan, rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, plan.smem),
          /*persistent=*/false);
  return plan;
}

// The primitive: T is the CUDA element type (__half, __nv_bfloat16, float, double); Base is
// Softmax or LogSoftmax, which share one contract.
template <typename T, Algorithm kAlgorithm, typename Base>
class SoftmaxImpl final : public Base {
 public:
  void Launch(Stream* stream, int64_t rows, int64_t cols, const void* x, void* y) override {
    if (rows <= 0 || cols <= 0) { return; }
    auto* cuda_stream = static_cast<CudaStream*>(stream);
    // "Aligned" needs y too: the warp_tile path stores whole packs of y where it loaded x's.
    // (Tensors from oneflite's allocators always are; a misaligned y from a C++ caller makes
    // the plan one that handles any alignment.)
    const Plan plan = PlanSoftmax<T, kAlgorithm>(cuda_stream->device_info(), rows, cols,
                                                 IsPackAligned(x) && IsPackAligned(y));
    plan.launch(plan, cuda_stream->cuda_stream(), rows, cols, x, y);
  }

  std::string Describe(int64_t rows, int64_t cols) const override {
    if (rows <= 0 || cols <= 0) { return "empty"; }
    return ToString(PlanSoftmax<T, kAlgorithm>(CurrentDeviceInfo(), rows, cols, true));
  }
};

// Defined, one dtype per file, in softmax_<dtype>.cu, so the dtypes compile in parallel; the
// extern declarations keep softmax.cu from instantiating any kernel.
template <typename T>
std::unique_ptr<Softmax> NewSoftmax() {
  return std::make_unique<SoftmaxImpl<T, Algorithm::kSoftmax, Softmax>>();
}
template <typename T>
std::unique_ptr<LogSoftmax> NewLogSoftmax() {
  return std::make_unique<SoftmaxImpl<T, Algorithm::kLogSoftmax, LogSoftmax>>();
}

#define ONEFLITE_SOFTMAX_DECLARE_DTYPE(T)                   \
  extern template std::unique_ptr<Softmax> NewSoftmax<T>(); \
  extern template std::unique_ptr<LogSoftmax> NewLogSoftmax<T>();
ONEFLITE_SOFTMAX_DECLARE_DTYPE(__half)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(__nv_bfloat16)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(float)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(double)
#undef ONEFLITE_SOFTMAX_DECLARE_DTYPE

}  // namespace oneflite::ep::primitive::cuda_softmax

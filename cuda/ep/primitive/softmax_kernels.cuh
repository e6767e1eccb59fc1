// The CUDA softmax kernel family behind the "softmax" and "log_softmax" primitives.
//
// A row-wise softmax moves the bytes of a copy (x read once, y written once), so the goal of
// every path is the device's copy bandwidth. Which path runs depends on the row length:
//
//   warp          the row lives in the registers of one warp, or of a smaller group of lanes
//                 for short rows; max and sum are butterfly shuffles. Reads x once.
//   block_smem    one block per row, the row cached in shared memory (up to the opt-in limit,
//                 about 227 KiB on Hopper), copied there asynchronously; while one block waits
//                 on its copy, the SM's other blocks compute. Reads x once.
//   block_online  one block per row for rows longer than its cache (rows past shared memory,
//                 or two blocks sharing an SM's): as much of the row as fits is cached, the rest
//                 is read twice, the second time usually from L2.
//   block_registers  one block per row, the row in its threads' registers (rows that fill one
//                 of its shapes: float 768-32768 columns, 16-bit 3585-4096 and 7169-8192). Rows
//                 of exactly 128 packs on 128 threads come in by one bulk copy (sm_90 on).
//   warp_tile     short rows whose 32-bit word count is an odd 7-25 times 1, 2, 4 or 8 (half
//                 100: 50 words, 2 x 25): a warp copies two tiles of whole rows into shared
//                 memory as a copy kernel would, and computes each row there with a few lanes.
//                 Reads x once.
//
// Every path launches one block per tile of rows (SetGrid). On sm_90 with a wide DRAM and a
// large L2, float block_registers rows of 2048 columns and more (below 1024 threads), the 16-bit
// warp path's rows of 1280-2048 and 16-bit softmax rows of whole 128-byte lines on block_smem's
// 512 threads (up to 37632 columns) run copies of their kernels that ask L2 for x's bytes 4 MiB
// ahead of their own (ReadAhead).
//
// Both block paths are one kernel (BlockSoftmaxKernel). Its first pass keeps a running
// (max, sum) pair per thread (the online normalizer), so max and sum come from one pass over
// the row, and x is never read a third time. NOTES.md beside this file explains each choice.
//
// All global accesses are 16-byte packs (4 floats, 8 halves or bfloat16s, 2 doubles). A row need
// not start on a 16-byte boundary (odd cols, or a view with a storage offset), so each row is
// seen through its *window*: the 16-byte-aligned packs that cover it. Packs wholly inside the
// row move as one vector. The warp path spreads the columns outside them (at most 2 * (P - 1)
// a row) over the lanes as scalars; the block path reads and writes the (at most two) packs that
// stick out of the row element by element. Everything outside the row reads as -inf, which
// never wins the max and adds exp(-inf) = 0 to the sum.
//
// One decision function, PlanSoftmax, picks the path and its configuration; Launch runs the
// plan and Describe prints it, so the two can never disagree.
#pragma once

// The family is one file a path, in reading order; each includes what it builds on, and the
// planner includes them all:
//   softmax_common.cuh           element types, 16-byte packs, the arithmetic, row windows
//   softmax_warp.cuh             path 1, warp
//   softmax_block.cuh            paths 2 and 3, block_smem and block_online
//   softmax_block_registers.cuh  path 4, block_registers
//   softmax_warp_tile.cuh        path 5, warp_tile
//   softmax_plan.cuh             PlanSoftmax, the launchers, the primitive (SoftmaxImpl)
#include "ep/primitive/softmax_plan.cuh"

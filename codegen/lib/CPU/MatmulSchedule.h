//===- MatmulSchedule.h - register tile choice for the CPU ------*- C++ -*-===//
//
// The register tile of the matmul schedule (kiln-schedule-matmul) depends on
// the vector registers of the target: picked here from the subtarget so the
// pipeline string stays a plain function of the options.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_MATMULSCHEDULE_H
#define KILN_CODEGEN_CPU_MATMULSCHEDULE_H

#include <cstdint>

namespace llvm {
class MCSubtargetInfo;
}

namespace kiln {

/// Rows x columns of f32 accumulators held in registers, and the cache tile
/// around them.
struct MatmulTile {
  int64_t m, n; // register tile
  int64_t cacheM, cacheN, cacheK;
};

/// AVX-512 (32 zmm): 13x32, 26 accumulators, in 64x64x256 cache tiles
/// (docs/decisions/0014). 14x32 left LLVM's scheduler, which hoists a few
/// broadcasts ahead of the FMAs, short of registers: accumulator spills in
/// every k step; 13 rows also split 64 into 13+13+13+13+12, not 14x4+8.
/// AVX/AVX2 (16 ymm): 6x16, 12 accumulators, in 48x64x256 cache tiles: a
/// k tile of 64 left each register tile's 64-step k loop to load and store
/// its accumulators, 8-10 % of the transformers' time on Zen 3
/// (docs/decisions/0013). SSE (16 xmm): 4x8, 8 accumulators, 32x64x64.
MatmulTile selectMatmulTile(const llvm::MCSubtargetInfo &subtarget);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_MATMULSCHEDULE_H

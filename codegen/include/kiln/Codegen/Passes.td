//===- Passes.td - code generation passes ------------------*- tablegen -*-===//
//
// Passes that take the kiln dialect down to buffers and loops. They run after
// the graph passes, inside the CPU code generator (codegen/lib/CPU), and each
// can be run alone through kiln-opt for testing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_PASSES_TD
#define KILN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"kiln-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lower kiln ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every kiln op into structured ops on tensors: elementwise ops
    become `linalg.generic` with broadcasting indexing maps, matmul becomes
    `linalg.matmul` (rank 2) or a `linalg.generic` with a reduction loop
    (batched), reductions become `linalg.generic` over an initialized output,
    reshape becomes `tensor.collapse_shape`/`tensor.expand_shape` (views, no
    copy), transpose becomes `linalg.transpose` and constants become
    `arith.constant`. Function arguments are marked not writable so that
    bufferization never writes into a caller's input.

    Before:
    ```mlir
    %r = kiln.relu %x : tensor<4xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %z = arith.constant 0.0 : f32
      %m = arith.maximumf %in, %z : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect",
    "mlir::bufferization::BufferizationDialect"
  ];
}

def ArenaAllocate : Pass<"kiln-arena-allocate", "mlir::func::FuncOp"> {
  let summary = "place every intermediate buffer at a fixed offset of one arena argument";
  let description = [{
    Runs after bufferization and `buffer-results-to-out-params`, when the
    only `memref.alloc`s left are intermediates with static shapes. Appends
    one `memref<Nxi8>` argument, the arena the caller owns, and replaces each
    allocation by a `memref.view` at a fixed, aligned offset; deallocations
    are dropped. The generated code therefore never allocates at run time.

    This first planner gives each buffer its own range (no reuse). It also
    computes the live-set lower bound: the largest number of bytes that are
    live at one point of the op order, following views and reshapes of a
    buffer to its last use. Both numbers are recorded on the function as
    `kiln.arena_bytes` and `kiln.arena_lower_bound_bytes`.

    Before:
    ```mlir
    func.func @f(%x: memref<4xf32>, %y: memref<4xf32>) {
      %t = memref.alloc() : memref<4xf32>
      ...
    }
    ```
    After:
    ```mlir
    func.func @f(%x: memref<4xf32>, %y: memref<4xf32>, %arena: memref<64xi8>)
        attributes {kiln.arena_bytes = 64 : i64, ...} {
      %c0 = arith.constant 0 : index
      %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "byte alignment of every buffer and of the arena itself">
  ];
  let statistics = [
    Statistic<"numBuffers", "num-buffers", "allocations placed in the arena">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def LowerCopies : Pass<"kiln-lower-copies", "mlir::func::FuncOp"> {
  let summary = "turn memref.copy into linalg.copy";
  let description = [{
    `memref.copy` between buffers that are not both contiguous lowers to a
    call into MLIR's C runner library (`memrefCopy`), which an artifact must
    not depend on. Rewritten as `linalg.copy`, every copy becomes loops
    that LLVM turns back into `memcpy` where the data is contiguous.

    Before:
    ```mlir
    memref.copy %src, %dst : memref<2x2xf32, strided<[4, 1]>> to memref<2x2xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%src : memref<2x2xf32, strided<[4, 1]>>) outs(%dst : memref<2x2xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // KILN_CODEGEN_PASSES_TD

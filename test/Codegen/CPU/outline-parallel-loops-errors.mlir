// RUN: kiln-opt %s --kiln-outline-parallel-loops -verify-diagnostics

// A name the outlined body would take is already used: an error at the
// loop, and the pass leaves no half-built function behind (the serial loop's
// candidate body, built before the names are chosen, is dropped too).
func.func private @f_body0()
func.func @f(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  // expected-error @below {{cannot outline: symbol 'f_body0' or 'f_region0' already exists}}
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  }
  return
}

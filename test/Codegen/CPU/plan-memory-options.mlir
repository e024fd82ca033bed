// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(kiln-plan-memory{alignment=48}))'

// A non-power-of-two alignment is refused, and the number is printed as a number.
// expected-error @+1 {{'func.func' op expects a power-of-two alignment, got 48}}
func.func @alignment_48() {
  return
}

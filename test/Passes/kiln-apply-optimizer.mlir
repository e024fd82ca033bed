// RUN: kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=SGD
// RUN: kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=momentum lr=0.5 momentum=0.25" | FileCheck %s --check-prefix=MOMENTUM
// RUN: kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=adam lr=0.5 beta1=0.75 beta2=0.875 epsilon=0.125" | FileCheck %s --check-prefix=ADAM
// RUN: kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=sgd lr=0.5 weight-decay=0.25" | FileCheck %s --check-prefix=DECAY

// A gradient function as kiln-generate-gradients leaves it (the gradient is
// a plain argument here, so that only the update shows): the gradient result
// is replaced by the new parameter and the step counter.

// Plain gradient descent, w - (g * lr); the step counter is the only other state.
// SGD-LABEL: func.func @one_parameter
// SGD-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32> {kiln.name = "x"}
// SGD-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {kiln.name = "w", kiln.parameter, kiln.state = "parameter"}
// SGD-SAME: %[[T:[a-z0-9]+]]: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// SGD-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "w", kiln.state = "parameter"}, tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// SGD: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<f64>
// SGD: %[[T1:.*]] = kiln.add %[[T]], %[[ONE]]
// SGD: %[[LR:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// SGD: %[[D:.*]] = kiln.mul %[[X]], %[[LR]]
// SGD: %[[W1:.*]] = kiln.sub %[[W]], %[[D]]
// SGD: return %{{.*}}, %[[W1]], %[[T1]]

// Momentum: v' = v * mu + g; w - v' * lr; the velocity is state after the
// parameter and before the step.
// MOMENTUM-LABEL: func.func @one_parameter
// MOMENTUM-SAME: %[[V:[a-z0-9]+]]: tensor<3xf32> {kiln.name = "optimizer.velocity.w", kiln.state = "moment"}
// MOMENTUM-SAME: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// MOMENTUM-SAME: tensor<3xf32> {kiln.name = "w", kiln.state = "parameter"}, tensor<3xf32> {kiln.name = "optimizer.velocity.w", kiln.state = "moment"}, tensor<f64>
// MOMENTUM: %[[MU:.*]] = kiln.constant dense<2.500000e-01> : tensor<f32>
// MOMENTUM: %[[DECAYED:.*]] = kiln.mul %[[V]], %[[MU]]
// MOMENTUM: %[[V1:.*]] = kiln.add %[[DECAYED]], %arg0
// MOMENTUM: %[[LR:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// MOMENTUM: %[[D:.*]] = kiln.mul %[[V1]], %[[LR]]
// MOMENTUM: %[[W1:.*]] = kiln.sub %arg1, %[[D]]
// MOMENTUM: return %{{.*}}, %[[W1]], %[[V1]], %{{.*}}

// Adam: both moments, the bias corrections from the new step in f64 (cast
// to f32 once per parameter), epsilon outside the square root.
// ADAM-LABEL: func.func @one_parameter
// ADAM-SAME: %[[M:[a-z0-9]+]]: tensor<3xf32> {kiln.name = "optimizer.m.w", kiln.state = "moment"}
// ADAM-SAME: %[[V:[a-z0-9]+]]: tensor<3xf32> {kiln.name = "optimizer.v.w", kiln.state = "moment"}
// ADAM-SAME: %[[T:[a-z0-9]+]]: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// ADAM: %[[T1:.*]] = kiln.add %[[T]]
// ADAM: %[[B1:.*]] = kiln.constant dense<7.500000e-01> : tensor<f64>
// ADAM: %[[B1T:.*]] = kiln.pow %[[B1]], %[[T1]]
// ADAM: %[[C1:.*]] = kiln.sub %{{.*}}, %[[B1T]]
// ADAM: %[[B2:.*]] = kiln.constant dense<8.750000e-01> : tensor<f64>
// ADAM: %[[B2T:.*]] = kiln.pow %[[B2]], %[[T1]]
// ADAM: %[[C2:.*]] = kiln.sub %{{.*}}, %[[B2T]]
// ADAM: %[[STEPSIZE:.*]] = kiln.div %{{.*}}, %[[C1]]
// ADAM: %[[ROOTC2:.*]] = kiln.sqrt %[[C2]]
// ADAM: kiln.mul %[[M]]
// ADAM: %[[M1:.*]] = kiln.add
// ADAM: %[[GG:.*]] = kiln.mul %arg0, %arg0
// ADAM: kiln.mul %[[V]]
// ADAM: %[[V1:.*]] = kiln.add
// ADAM: %[[ROOT:.*]] = kiln.sqrt %[[V1]] : tensor<3xf32>
// ADAM: %[[ROOTC2F:.*]] = kiln.cast %[[ROOTC2]] : tensor<f64> -> tensor<f32>
// ADAM: %[[CORR:.*]] = kiln.div %[[ROOT]], %[[ROOTC2F]]
// ADAM: %[[EPS:.*]] = kiln.constant dense<1.250000e-01> : tensor<f32>
// ADAM: %[[DENOM:.*]] = kiln.add %[[CORR]], %[[EPS]]
// ADAM: %[[RATIO:.*]] = kiln.div %[[M1]], %[[DENOM]]
// ADAM: %[[SS:.*]] = kiln.cast %[[STEPSIZE]] : tensor<f64> -> tensor<f32>
// ADAM: %[[D:.*]] = kiln.mul %[[RATIO]], %[[SS]]
// ADAM: %[[W1:.*]] = kiln.sub %arg1, %[[D]]
// ADAM: return %{{.*}}, %[[W1]], %[[M1]], %[[V1]], %[[T1]]

// Weight decay adds w * lambda to the gradient first.
// DECAY-LABEL: func.func @one_parameter
// DECAY: %[[L:.*]] = kiln.constant dense<2.500000e-01> : tensor<f32>
// DECAY: %[[WD:.*]] = kiln.mul %arg1, %[[L]]
// DECAY: %[[G:.*]] = kiln.add %arg0, %[[WD]]
// DECAY: kiln.mul %[[G]]
func.func @one_parameter(%x: tensor<3xf32> {kiln.name = "x"},
                         %w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.w"}) {
  %p = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = kiln.reduce_sum %p axes = [0] : tensor<3xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<3xf32>
}

// -----

// Several parameters: state is every parameter in argument order, then the
// moments parameter by parameter, then the step; the other results (here
// an output between the gradients) keep their order in front. An f64
// parameter needs no cast of the bias corrections.
// SGD-LABEL: func.func @two_parameters
// SGD-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<2xf32> {kiln.name = "y"}, tensor<3xf32> {kiln.name = "a", kiln.state = "parameter"}, tensor<2xf64> {kiln.name = "b", kiln.state = "parameter"}, tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// ADAM-LABEL: func.func @two_parameters
// ADAM-SAME: {kiln.name = "optimizer.m.a", kiln.state = "moment"}, %{{.*}}: tensor<3xf32> {kiln.name = "optimizer.v.a", kiln.state = "moment"}, %{{.*}}: tensor<2xf64> {kiln.name = "optimizer.m.b", kiln.state = "moment"}, %{{.*}}: tensor<2xf64> {kiln.name = "optimizer.v.b", kiln.state = "moment"}, %{{.*}}: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
// ADAM-COUNT-2: kiln.cast
// ADAM-NOT: kiln.cast
// ADAM: return
func.func @two_parameters(%a: tensor<3xf32> {kiln.name = "a", kiln.parameter},
                          %y0: tensor<2xf32> {kiln.name = "y0"},
                          %b: tensor<2xf64> {kiln.name = "b", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.a"},
        tensor<2xf32> {kiln.name = "y"}, tensor<2xf64> {kiln.name = "grad.b"}) {
  %l = kiln.reduce_sum %a axes = [0] : tensor<3xf32> -> tensor<f32>
  return %l, %a, %y0, %b : tensor<f32>, tensor<3xf32>, tensor<2xf32>, tensor<2xf64>
}

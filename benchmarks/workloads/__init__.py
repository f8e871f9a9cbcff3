"""The workloads of BENCHMARKS.md, in order: W0-W8, E1, K1, K2 and D0 timed in alternating
rounds, C1, C2, M1 and R1 in subprocesses, D1 in processes under mpiexec; and the GPU variants
of W1-W6 (``--device gpu``)."""
from benchmarks.workloads import (c1_first_call, c2_first_step, d0_data_pipeline,
                                  d1_data_parallel, e1_eager_tape, k1_keras_fit,
                                  k2_keras_predict, m1_memory, r1_retracing,
                                  w0_overhead, w1_seed_function, w2_small_chain, w3_mlp, w4_cnn,
                                  w5_while_loop, w6_conv, w7_lstm, w8_transformer)

WORKLOADS = {module.WORKLOAD.id: module.WORKLOAD for module in (
    w0_overhead, w1_seed_function, w2_small_chain, w3_mlp, w4_cnn, w5_while_loop, w6_conv,
    w7_lstm, w8_transformer, e1_eager_tape, k1_keras_fit, k2_keras_predict, d0_data_pipeline,
    c1_first_call, c2_first_step, m1_memory, r1_retracing, d1_data_parallel)}

GPU_WORKLOADS = {module.GPU_WORKLOAD.id: module.GPU_WORKLOAD for module in (
    w1_seed_function, w2_small_chain, w3_mlp, w4_cnn, w5_while_loop, w6_conv)}

"""The workloads of BENCHMARKS.md, in order: W0-W6 timed in-process, C1 and M1 in subprocesses."""
from benchmarks.workloads import (c1_first_call, m1_memory, w0_overhead, w1_seed_function,
                                  w2_small_chain, w3_mlp, w4_cnn, w5_while_loop, w6_conv)

WORKLOADS = {module.WORKLOAD.id: module.WORKLOAD for module in (
    w0_overhead, w1_seed_function, w2_small_chain, w3_mlp, w4_cnn, w5_while_loop, w6_conv,
    c1_first_call, m1_memory)}

"""One rank of D1: ``mpiexec -n N python -m benchmarks.data_parallel_child FRAMEWORK MODEL
[--profile P] [--port PORT]``.

FRAMEWORK is ``hybridtf`` (the W3/W4 step decorated with ``tf.function``, the gradients
averaged over the ranks by ``hybridtf.distribute.mpi``: one fused all-reduce inside the compiled
step) or ``torch`` (the same step as a module under ``DistributedDataParallel`` on gloo, ranks
from mpiexec's environment, rendezvous on 127.0.0.1:PORT).  MODEL is ``W3`` or ``W4``.

Every rank trains on the workload's own batch (weak scaling: N ranks process N batches per
step) on one kernel thread.  Since the batches are equal, the averaged gradient is the one-rank
gradient, and the first losses must equal those of ``-n 1``.  Rank 0 prints one line
``BENCHMARK-RESULT <json>``: those losses and the images per second of each sample (all ranks'
images over the slowest rank's time).
"""
import argparse
import json
import os
import sys
import time

from benchmarks.subprocesses import MARKER

CHECK_STEPS = 3
SAMPLE_S = {"full": 1.0, "quick": 0.25, "smoke": 0.02}
SAMPLES = {"full": 5, "quick": 3, "smoke": 2}


def _module(model):
    from benchmarks.workloads import w3_mlp, w4_cnn
    return {"W3": w3_mlp, "W4": w4_cnn}[model]


class _Hybridtf:
    """hybridtf with hybridtf.distribute.mpi."""

    def __init__(self, model):
        from benchmarks import adam, frameworks
        tf = frameworks.load("hybridtf")   # on the CPU, as every workload but the GPU variants
        import hybridtf.distribute.mpi as hvd
        tf.config.threading.set_intra_op_parallelism_threads(1)
        hvd.init()
        self.tf, self.hvd = tf, hvd
        self.rank, self.size = hvd.rank(), hvd.size()
        module = _module(model)
        init = module.initial_params()
        params = [tf.Variable(p) for p in init]
        optimizer = adam.TFStyleAdam(tf, init)
        self._step = tf.function(module.make_train_step(
            tf, params, _AveragingOptimizer(optimizer, hvd)))
        self._alone = tf.function(module.make_train_step(tf, params, optimizer))
        self._x, self._y = (tf.constant(a) for a in module.batch())
        self.batch = int(self._x.shape[0])

    def step(self):
        return float(self._step(self._x, self._y))

    def step_alone(self):
        """The step without the all-reduce (each rank on its own)."""
        return float(self._alone(self._x, self._y))

    def agree(self, value, op):
        return float(self.hvd.allreduce(self.tf.constant(value, self.tf.float64),
                                        op={"max": self.hvd.Max, "sum": self.hvd.Sum}[op]))


class _AveragingOptimizer:
    """Averages the gradients over the ranks (one fused all-reduce) before the Adam update."""

    def __init__(self, optimizer, hvd):
        self._optimizer = optimizer
        self._hvd = hvd

    def apply(self, params, grads):
        self._optimizer.apply(params, self._hvd.grouped_allreduce(grads, op=self._hvd.Average))


class _Torch:
    """PyTorch, DistributedDataParallel on gloo."""

    def __init__(self, model, port):
        import torch
        import torch.distributed as dist
        from benchmarks import adam
        torch.set_num_threads(1)
        self.rank, self.size = _launcher_rank()
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=self.rank, world_size=self.size)
        self.torch, self.dist = torch, dist
        module = _module(model)
        params, self._x, self._y = module.torch_params_and_batch(torch)

        class Loss(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.params = torch.nn.ParameterList(params)

            def forward(self, x, y):
                return module.torch_loss(torch, list(self.params), x, y)
        self._alone = Loss()
        self._model = torch.nn.parallel.DistributedDataParallel(self._alone)
        self._params = list(self._model.parameters())
        self._optimizer = adam.TorchAdam(torch, self._params)
        self.batch = int(self._x.shape[0])

    def step(self, model=None):
        loss = (model or self._model)(self._x, self._y)
        loss.backward()          # DDP averages the gradients in buckets, during the backward
        self._optimizer.apply(self._params, [p.grad for p in self._params])
        for p in self._params:
            p.grad = None
        return float(loss.detach())

    def step_alone(self):
        """The step without DDP's all-reduce (each rank on its own)."""
        return self.step(self._alone)

    def agree(self, value, op):
        tensor = self.torch.tensor([value], dtype=self.torch.float64)
        self.dist.all_reduce(tensor, op={"max": self.dist.ReduceOp.MAX,
                                         "sum": self.dist.ReduceOp.SUM}[op])
        return float(tensor[0])


def _launcher_rank():
    """(rank, size) from the environment mpiexec gives its processes."""
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def _rates(runner, step, steps, samples):
    rates = []
    for _ in range(samples):
        runner.agree(0.0, "sum")                            # start together
        start = time.perf_counter()
        for _ in range(steps):
            step()
        elapsed = runner.agree(time.perf_counter() - start, "max")
        rates.append(runner.size * runner.batch * steps / elapsed)
    return rates


def measure(runner, profile):
    losses = [runner.step() for _ in range(CHECK_STEPS)]   # also the warm-up (compile)
    # Steps per sample from rank 0's timing of a few steps, agreed by every rank (the
    # collectives of each step must match).
    start = time.perf_counter()
    for _ in range(CHECK_STEPS):
        runner.step()
    per_step = runner.agree((time.perf_counter() - start) / CHECK_STEPS, "max")
    steps = max(1, int(SAMPLE_S[profile] / max(per_step, 1e-6)))
    result = {"losses": losses, "steps_per_sample": steps, "ranks": runner.size,
              "images_s": _rates(runner, runner.step, steps, SAMPLES[profile])}
    if runner.size > 1:
        # The same ranks without the all-reduce: what sharing the machine alone costs.
        runner.step_alone()
        result["images_s_alone"] = _rates(runner, runner.step_alone, steps, SAMPLES[profile])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.data_parallel_child")
    parser.add_argument("framework", choices=("hybridtf", "torch"))
    parser.add_argument("model", choices=("W3", "W4"))
    parser.add_argument("--profile", default="full", choices=tuple(SAMPLE_S))
    parser.add_argument("--port", type=int, default=29500)
    args = parser.parse_args(argv)
    from benchmarks.records import new_variant, record_failure
    rank = 0
    try:
        runner = _Hybridtf(args.model) if args.framework == "hybridtf" else \
            _Torch(args.model, args.port)
        rank = runner.rank
        result = measure(runner, args.profile)
        result["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - the parent reports it
        entry = new_variant(args.framework, "d1")
        record_failure(entry, exc)
        result = {k: entry[k] for k in ("status", "reason", "traceback") if k in entry}
    if rank == 0:
        sys.stdout.flush()
        print(MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

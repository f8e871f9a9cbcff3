"""tf.distribute and hybridtf.distribute.mpi: data-parallel training on MPI.

The tests marked ``mpi`` start ``mpiexec -n 2 python tests/distributed_worker.py SCENARIO DIR``
(each rank writes what it saw to DIR) and compare the ranks with each other and with one process
trained on the global batches here.  They need the ``distributed`` extra (mpi4py and an MPI with
``mpiexec``, e.g. the mpich wheel) and are skipped without it.  The others run in this process.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf.distribute import communicator as communicator_lib
from hybridtf.distribute import input_lib, processes

sys.path.insert(0, os.path.dirname(__file__))
import distributed_worker as worker  # noqa: E402

WORKER = os.path.join(os.path.dirname(__file__), "distributed_worker.py")


def _mpiexec():
    here = shutil.which("mpiexec", path=os.path.dirname(sys.executable))
    return here or shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(
    not communicator_lib.mpi_available() or _mpiexec() is None,
    reason="needs the `distributed` extra (mpi4py and an MPI library with mpiexec): "
           'pip install -e ".[distributed]"')


def run_ranks(scenario, directory, timeout=300, env=None, ranks=2):
    """Runs the worker under mpiexec; returns (completed process, per-rank results)."""
    command = [_mpiexec(), "-n", str(ranks), sys.executable, WORKER, scenario, str(directory)]
    environment = dict(os.environ, **(env or {}))
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=environment)
    results = []
    for rank in range(ranks):
        path = os.path.join(directory, f"rank{rank}.json")
        if os.path.exists(path):
            with open(path) as f:
                results.append(json.load(f))
    return done, results


def assert_weights_close(a, b, atol=1e-5):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.array(x), np.array(y), rtol=1e-5, atol=atol)


def assert_weights_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.array(x), np.array(y))


# ---- in this process ----------------------------------------------------------------------------
@given(st.integers(0, 200), st.integers(1, 9))
def test_replica_bounds_split_a_batch_in_order(size, replicas):
    bounds = [input_lib.replica_bounds(size, i, replicas) for i in range(replicas)]
    assert bounds[0][0] == 0 and bounds[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


def test_distributed_dataset_parts_make_up_the_global_batches():
    x = np.arange(22 * 2, dtype=np.float32).reshape(22, 2)
    dataset = tf.data.Dataset.from_tensor_slices((x, np.arange(22))).batch(8)
    parts = [list(input_lib.distribute_dataset(dataset, i, 3)) for i in range(3)]
    batches = list(dataset)
    assert all(len(p) == len(batches) for p in parts)
    for step, (bx, by) in enumerate(batches):
        np.testing.assert_array_equal(np.concatenate([p[step][0] for p in parts]), bx)
        np.testing.assert_array_equal(np.concatenate([p[step][1] for p in parts]), by)
    assert [len(p[0][0]) for p in parts] == [3, 3, 2]
    assert parts[0][0][0].shape.rank == 2
    spec = input_lib.distribute_dataset(dataset, 0, 2).element_spec
    assert spec[0].shape.as_list() == [None, 2]


def test_distributed_dataset_without_batch_is_shared_out_element_by_element():
    dataset = tf.data.Dataset.range(7)
    parts = [[int(v) for v in input_lib.distribute_dataset(dataset, i, 2)] for i in range(2)]
    assert parts == [[0, 2, 4, 6], [1, 3, 5]]


def test_distributed_dataset_iterates_inside_a_function():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32)).batch(4)
    part = input_lib.distribute_dataset(dataset, 1, 2)

    @tf.function
    def total(ds):
        s = tf.constant(0.0)
        for batch in ds:
            s += tf.reduce_sum(batch)
        return s
    assert float(total(part)) == 2 + 3 + 6 + 7 + 10 + 11


def test_default_strategy_and_contexts():
    default = tf.distribute.get_strategy()
    assert default.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy()
    assert not tf.distribute.in_cross_replica_context()
    assert tf.distribute.get_replica_context().num_replicas_in_sync == 1
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        assert tf.distribute.get_strategy() is strategy
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None
        with pytest.raises(ValueError, match="Mixing different"):
            with tf.distribute.MirroredStrategy().scope():
                pass

        def replica_fn(x):
            context = tf.distribute.get_replica_context()
            assert int(context.replica_id_in_sync_group) == 0
            return context.all_reduce(tf.distribute.ReduceOp.SUM, x * 2)
        result = strategy.run(replica_fn, args=(tf.constant([1.0, 2.0]),))
        np.testing.assert_array_equal(result.numpy(), [2.0, 4.0])
        mean = strategy.reduce(tf.distribute.ReduceOp.MEAN, tf.constant([[1.0], [3.0]]), axis=0)
        np.testing.assert_array_equal(mean.numpy(), [2.0])
        assert strategy.experimental_local_results(result) == (result,)
    with pytest.raises(ValueError, match="reduce_op"):
        strategy.reduce("MAX", tf.constant(1.0), axis=None)


def test_strategy_run_inside_a_function_is_traced_once():
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        v = tf.Variable(1.0)

    @tf.function
    def step(x):
        def replica_fn(x):
            if tf.reduce_sum(x) > 0:        # converted by AutoGraph inside run
                v.assign_add(tf.reduce_sum(x))
            return v.read_value()
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_fn, (x,)),
                               axis=None)
    assert float(step(tf.constant([1.0, 2.0]))) == 4.0
    assert float(step(tf.constant([-1.0, -2.0]))) == 4.0
    assert step.experimental_get_tracing_count() == 1


def test_multi_worker_strategy_runs_one_replica_without_mpiexec():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    assert strategy.cluster_resolver.task_id == 0
    assert strategy.extended.should_checkpoint


def test_launched_by_mpiexec_without_mpi4py_is_an_error(monkeypatch):
    monkeypatch.setattr(communicator_lib, "mpi4py", None)
    monkeypatch.setenv("PMI_SIZE", "2")
    with pytest.raises(ImportError, match="mpi4py is not installed"):
        processes.join_job()
    monkeypatch.setenv("PMI_SIZE", "1")
    assert processes.join_job() is communicator_lib.LOCAL


def test_keras_fit_under_a_one_replica_strategy_matches_no_strategy():
    with tf.distribute.MirroredStrategy().scope():
        under = worker.train_fit(tf.distribute.get_strategy(), seed=5)
    plain = worker.train_fit(tf.distribute.get_strategy(), seed=5)
    assert_weights_equal(under["final"], plain["final"])
    assert under["history"] == plain["history"]


def test_compute_average_loss():
    losses = tf.constant([1.0, 2.0, 3.0, 6.0])
    assert float(tf.nn.compute_average_loss(losses)) == 3.0
    assert float(tf.nn.compute_average_loss(losses, global_batch_size=8)) == 1.5
    weighted = tf.nn.compute_average_loss(losses, sample_weight=[1.0, 0.0, 1.0, 0.0])
    assert float(weighted) == 1.0
    assert float(tf.nn.compute_average_loss(tf.zeros([0]))) == 0.0
    with pytest.raises(TypeError, match="floating-point"):
        tf.nn.compute_average_loss(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="global_batch_size"):
        tf.nn.compute_average_loss(losses, global_batch_size=2.5)
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.compute_average_loss(losses)
        assert float(strategy.run(tf.nn.compute_average_loss, (losses,))) == 3.0
        assert float(strategy.run(tf.nn.scale_regularization_loss, (tf.constant(2.0),))) == 2.0


def test_communication_options_are_checked():
    options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=1024,
                                                              timeout_seconds=5)
    assert options.bytes_per_pack == 1024 and options.timeout_seconds == 5
    with pytest.raises(ValueError, match="bytes_per_pack"):
        tf.distribute.experimental.CommunicationOptions(bytes_per_pack=-1)
    with pytest.raises(ValueError, match="timeout_seconds"):
        tf.distribute.experimental.CommunicationOptions(timeout_seconds="soon")
    with pytest.raises(ValueError, match="MPI"):
        tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.NCCL)


def test_gradients_travel_in_fused_buffers():
    arrays = [np.zeros((3, 4), np.float32), np.zeros(5, np.float64), np.zeros(7, np.float32),
              np.zeros(2, np.int32), np.zeros(3, np.float16)]
    layout = communicator_lib.Communicator._reduce_layout(("all_reduce", "sum", "t", 0), arrays)
    buffers = {dtype.name: [m[0] for m in members] for dtype, members, _ in layout.groups}
    assert buffers == {"float32": [0, 2, 4], "float64": [1], "int32": [3]}
    packed = communicator_lib.Communicator._reduce_layout(("all_reduce", "sum", "t", 64),
                                                          arrays)
    float32_packs = [[m[0] for m in members] for dtype, members, _ in packed.groups
                     if dtype == np.float32]
    assert float32_packs == [[0], [2, 4]]        # 48 bytes + 28 > 64: a second pack


def test_local_communicator_collectives_are_the_identity():
    local = communicator_lib.LOCAL
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(local.all_reduce([a], "mean")[0], a)
    np.testing.assert_array_equal(local.broadcast([a], 0)[0], a)
    np.testing.assert_array_equal(local.all_gather(a), a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="root_rank"):
        local.broadcast([a], 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        local.all_gather(np.float32(1.0))


def test_collective_timeout_setting(monkeypatch):
    monkeypatch.setenv(communicator_lib.TIMEOUT_VARIABLE, "12.5")
    assert communicator_lib.default_timeout() == 12.5
    monkeypatch.setenv(communicator_lib.TIMEOUT_VARIABLE, "0")
    assert communicator_lib.default_timeout() is None
    monkeypatch.setenv(communicator_lib.TIMEOUT_VARIABLE, "soon")
    with pytest.raises(ValueError, match="HYBRIDTF_COLLECTIVE_TIMEOUT"):
        communicator_lib.default_timeout()


def test_horovod_api_needs_init():
    import hybridtf.distribute.mpi as hvd
    hvd.shutdown()
    with pytest.raises(ValueError, match="init"):
        hvd.rank()


# ---- under mpiexec -n 2 -------------------------------------------------------------------------
@needs_mpi
def test_training_on_two_processes_matches_one_process_on_the_global_batch(tmp_path):
    done, ranks = run_ranks("training", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(ranks) == 2
    first, second = ranks
    assert first["replicas"] == 2
    assert first["threads"] == second["threads"] == max(1, processes.threads.usable_cores() // 2)

    # A decorated train step through strategy.run: rank 0's initial weights everywhere, the
    # gradients all-reduced inside the compiled step (one all-reduce for the gradients, one
    # for the loss), the same weights as one process training on the global batches.
    assert_weights_equal(first["custom"]["initial"], second["custom"]["initial"])
    assert_weights_equal(first["custom"]["final"], second["custom"]["final"])
    assert first["custom"]["all_reduces_in_graph"] == 2
    alone = worker.train_custom(tf.distribute.get_strategy(), seed=11)
    assert_weights_equal(alone["initial"], first["custom"]["initial"])
    assert_weights_close(alone["final"], first["custom"]["final"])
    np.testing.assert_allclose(first["custom"]["losses"], alone["losses"], rtol=1e-5)

    # Keras fit / evaluate / predict: the global batch of 16 split 8 + 8, epoch logs and
    # evaluate over every sample, predictions of every sample on every rank.
    alone = worker.train_fit(tf.distribute.get_strategy(), seed=5)
    for rank in ranks:
        assert_weights_close(alone["final"], rank["fit"]["final"])
        for key, values in alone["history"].items():
            np.testing.assert_allclose(rank["fit"]["history"][key], values, rtol=1e-5)
        for key, value in alone["evaluate"].items():
            assert rank["fit"]["evaluate"][key] == pytest.approx(value, rel=1e-5)
        np.testing.assert_allclose(rank["fit"]["predict"], alone["predict"], rtol=1e-5,
                                   atol=1e-6)
    assert_weights_equal(first["fit"]["final"], second["fit"]["final"])
    assert_weights_equal(first["fit_shuffled"]["final"], second["fit_shuffled"]["final"])

    # Checkpoints and saves: rank 0 writes, every rank restores the same values.
    assert first["saves"]["writes_files"] and not second["saves"]["writes_files"]
    for rank in ranks:
        saves = rank["saves"]
        for key in ("from_checkpoint", "from_manager", "loaded"):
            assert_weights_equal(saves[key], first["saves"]["saved"])
        assert saves["managed_list"] == [saves["latest"]] == [saves["managed"]]
    assert sorted(os.listdir(tmp_path / "managed")) == [".checkpoint.lock", "checkpoint",
                                                        "ckpt-3.index"]


@needs_mpi
def test_horovod_api_on_two_processes(tmp_path):
    done, ranks = run_ranks("horovod", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = ranks
    for rank in ranks:
        assert rank["size"] == 2
        assert rank["allreduce"] == [1.5, 3.0]
        assert rank["allreduce_sum"] == [3]
        assert rank["allgather"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert rank["broadcast"] == [1.0, 1.0, 1.0]
    # Different initial weights, made equal by broadcast_variables.
    assert not np.array_equal(first["before_broadcast"][0], second["before_broadcast"][0])
    assert_weights_equal(first["initial"], first["before_broadcast"])
    assert_weights_equal(second["initial"], first["before_broadcast"])
    assert_weights_equal(first["final"], second["final"])
    # Averaged gradients of the halves = the gradient of the mean over the global batch.
    import hybridtf.distribute.mpi as hvd
    hvd.init()
    alone = worker.train_horovod(seed=3)
    assert_weights_close(alone["final"], first["final"])


@needs_mpi
def test_bad_use_raises_the_same_clear_error_on_every_rank(tmp_path):
    done, ranks = run_ranks("misuse", tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(ranks) == 2
    for rank in ranks:
        assert "InvalidArgumentError" in rank["mismatched_shapes"]
        assert "float32[5, 4]" in rank["mismatched_shapes"]
        assert "float32[5, 5]" in rank["mismatched_shapes"]
        assert "were not created under the scope" in rank["outside_scope"]
        assert "float32[2]" in rank["mismatched_reduce"]
        assert "float32[3]" in rank["mismatched_reduce"]


@needs_mpi
@pytest.mark.parametrize("scenario, message", [
    ("exit_early", "did not complete within 3 s"),     # the watchdog of the waiting rank
    ("raise", "uncaught RuntimeError"),                # the failing rank aborts the job
    ("kill", "BAD TERMINATION"),                       # mpiexec ends the job
])
def test_a_rank_that_stops_ends_the_job_with_an_error(tmp_path, scenario, message):
    done, ranks = run_ranks(scenario, tmp_path, timeout=120, env={"WORKER_TIMEOUT": "3"})
    assert done.returncode != 0
    assert message in done.stdout + done.stderr
    assert ranks == []

"""Each framework's variants of the timed workloads run in a process of that framework alone.

The parent still builds, checks and times every variant, round by round (``harness``), but
through a pipe to the framework's process, started at its first variant and kept for the run.
Frameworks sharing one process change each other's figures (measured on W7, 2 cores):

* TensorFlow sets the C library's allocator thresholds at its first eager op (``mallopt``).
  From then on every large array of every framework in the process comes from fresh pages, at
  every step: hybridtf's decorated W7 step went from no page faults to 7,000 a step, 16 -> 25 ms.
* A framework whose large blocks the allocator already keeps makes the next one's free of page
  faults: PyTorch's W7 step took 22 ms alone (3,700 faults a step) and 16-17 ms after
  hybridtf's step had run in its process.
* One library's pool threads, polling for work after their last call, look like load to
  another that sizes its thread count to the free cores.

A user runs one framework in a process; so does each variant here.  Its process settles (its
threads go idle) before and after every sample, so that a sample starts on a quiet machine.
"""
import gc
import multiprocessing

from benchmarks import frameworks, harness, profiles
from benchmarks.devices import GPU
from benchmarks.records import VariantFailed, record_failure
from benchmarks.workloads import GPU_WORKLOADS, WORKLOADS


# ---- the framework's process -------------------------------------------------------------------
class _Server:
    """The commands a framework's process answers; prepared variants are kept by key."""

    def __init__(self, device):
        frameworks.use_device(device)
        self.device = device
        self.prepared = {}

    def build(self, workload_id, impl_index, profile_name):
        workload = (GPU_WORKLOADS if self.device == GPU else WORKLOADS)[workload_id]
        impl = workload.impls[impl_index]
        built = impl.build(frameworks.load(impl.framework), profiles.get(profile_name))
        result = built.result()
        self.prepared[(workload_id, impl_index)] = harness.TimedCall(built.call)
        return result, built.units

    def calibrate(self, key, profile_name):
        return self.prepared[key].calibrate(profiles.get(profile_name))

    def sample(self, key, number, round_index):
        elapsed = self.prepared[key].sample(number, round_index)
        harness.settle()   # the next variant, in another process, starts on idle cores
        return elapsed

    def release(self):
        self.prepared.clear()
        gc.collect()


def _serve(connection, device):
    server = _Server(device)
    while True:
        command, arguments = connection.recv()
        if command == "stop":
            return
        try:
            reply = getattr(server, command)(*arguments)
        except Exception as exc:  # noqa: BLE001 - the parent reports it with the variant
            record = {}
            record_failure(record, exc)
            connection.send(("failed", record))
        else:
            connection.send(("ok", reply))


# ---- the parent's side -------------------------------------------------------------------------
class _FrameworkProcess:
    def __init__(self, framework, device):
        self.framework = framework
        context = multiprocessing.get_context("spawn")   # no fork of a process with threads
        self._connection, child_end = context.Pipe()
        self._process = context.Process(target=_serve, args=(child_end, device), daemon=True,
                                        name=f"benchmarks-{framework}")
        self._process.start()
        child_end.close()

    @property
    def pid(self):
        return self._process.pid

    def alive(self):
        return self._process.is_alive()

    def request(self, command, *arguments):
        try:
            self._connection.send((command, arguments))
            status, reply = self._connection.recv()
        except (EOFError, OSError):
            self._process.join(5)
            raise VariantFailed({
                "status": "error",
                "reason": f"the {self.framework} process ended (exit code "
                          f"{self._process.exitcode}) during {command!r}"}) from None
        if status == "failed":
            raise VariantFailed(reply)
        return reply

    def stop(self):
        if self.alive():
            try:
                self._connection.send(("stop", ()))
            except OSError:
                pass
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._connection.close()


class RemoteVariant:
    """A variant built in its framework's process: its checked result, its units, and
    ``harness.time_alternating``'s two methods."""

    def __init__(self, process, workload_id, impl_index, profile):
        self._process = process
        self._key = (workload_id, impl_index)
        self._result, self.units = process.request("build", workload_id, impl_index, profile.name)

    def result(self):
        return self._result

    def calibrate(self, profile):
        return self._process.request("calibrate", self._key, profile.name)

    def sample(self, number, round_index):
        return self._process.request("sample", self._key, number, round_index)


class FrameworkProcesses:
    """``with FrameworkProcesses(device) as processes:`` one process per framework, started as
    its first variant is built (again if it died), stopped at the end of the block."""

    def __init__(self, device):
        self.device = device
        self._processes = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        for process in self._processes.values():
            process.stop()
        self._processes = {}
        return False

    def build(self, workload_id, impl_index, framework, profile):
        process = self._processes.get(framework)
        if process is None or not process.alive():
            process = self._processes[framework] = _FrameworkProcess(framework, self.device)
        return RemoteVariant(process, workload_id, impl_index, profile)

    def release(self):
        """Drops every prepared variant (at the end of a workload)."""
        for process in self._processes.values():
            if process.alive():
                try:
                    process.request("release")
                except VariantFailed:
                    pass   # it ended meanwhile: started again at its framework's next variant

    def pids(self):
        return [p.pid for p in self._processes.values() if p.alive()]

"""Atomic saves: a save killed at any moment leaves the last good save loadable, with the same
values; the next save removes what it left; only provably stale leftovers are removed."""
import errno
import json
import os
import pathlib
import re
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.framework import atomic_files
from hybridtf.saved_model import array_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKER = pathlib.Path(__file__).resolve().parent / "save_kill_worker.py"

# Entries a complete save leaves, per kind: the target's own files and nothing else.
CLEAN_ENTRIES = {"saved_model": 6, "keras": 1, "weights_h5": 1, "weights_npz": 1,
                 "checkpoint": 5}


def _entries_of(tree, target):
    """The entries of a directory listing that belong to ``target``: itself, what is inside
    it, and its temporaries (``.<name>.*.tmp`` beside it)."""
    directory, name = os.path.split(target)
    return [entry for entry in tree if entry == target or entry.startswith(target + os.sep)
            or (os.path.dirname(entry) == directory
                and os.path.basename(entry).startswith(f".{name}."))]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills forked children")
@pytest.mark.parametrize("kind", ["saved_model", "keras", "weights_h5", "weights_npz",
                                  "checkpoint"])
def test_a_kill_at_any_moment_leaves_the_last_good_save(kind, tmp_path):
    kills = 60
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    env.setdefault("HYBRIDTF_CACHE_DIR", str(ROOT / ".numba_cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, str(WORKER), kind, str(tmp_path), str(kills), "7"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    target = report["path"]
    found = {"A": 0, "B": 0, "nothing": 0}
    interrupted = 0
    for i, outcome in enumerate(report["outcomes"]):
        allowed = ("A", "B", "nothing") if outcome["fresh"] else ("A", "B")
        assert outcome["found"] in allowed, f"kill {i}: {outcome['found']}"
        found[outcome["found"]] += 1
        if not outcome["fresh"] and \
                len(_entries_of(outcome["tree"], target)) > CLEAN_ENTRIES[kind]:
            interrupted += 1                    # the kill left a save half done
    # The kills hit saves at every stage: before, in the middle of, and after the switch.
    assert found["A"] > 0 and found["B"] > 0, found
    assert interrupted >= kills // 10, (interrupted, found)
    # The next save removed everything the killed saves left.
    assert report["final"] == "A"
    final = _entries_of(report["final_tree"], target)
    assert len(final) == CLEAN_ENTRIES[kind], final


# ---- single files --------------------------------------------------------------------------------
def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _token(pid, host=None):
    return f"{host or atomic_files._this_host()}-{pid}-0123abcd"


def test_only_provably_stale_temporaries_are_removed(tmp_path):
    path = tmp_path / "w.bin"
    other_host = "0" * 8 if atomic_files._this_host() != "0" * 8 else "1" * 8
    with atomic_files.live_save() as live:
        tokens = {"dead process": _token(_dead_pid()), "this process, done": _token(os.getpid()),
                  "live process": _token(os.getppid()), "other host": _token(1, other_host),
                  "this process, saving": live}
        for token in tokens.values():
            pathlib.Path(atomic_files.temporary_path(path, token)).write_bytes(b"partial")
        atomic_files.write_file(path, lambda f: f.write(b"new"))
        left = {name for name, token in tokens.items()
                if os.path.exists(atomic_files.temporary_path(path, token))}
    assert left == {"live process", "other host", "this process, saving"}
    assert path.read_bytes() == b"new"
    assert atomic_files.is_stale(live)                 # the save is over


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "w.bin"
    atomic_files.write_file(path, lambda f: f.write(b"old"))

    def fails(f):
        f.write(b"half")
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        atomic_files.write_file(path, fails)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["w.bin"]


def _record_file_operations(monkeypatch):
    """Records fsync (of files and directories), rename and unlink calls, in order."""
    events = []
    fsync, replace, unlink = os.fsync, os.replace, os.unlink

    def recording_fsync(fd):
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        events.append((f"fsync {kind}", os.readlink(f"/proc/self/fd/{fd}")
                       if os.path.exists("/proc/self/fd") else "?"))
        fsync(fd)

    def recording_replace(source, destination):
        events.append(("replace", os.fspath(destination)))
        replace(source, destination)

    def recording_unlink(path, *args, **kwargs):
        events.append(("unlink", os.fspath(path)))
        unlink(path, *args, **kwargs)
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.setattr(os, "unlink", recording_unlink)
    return events


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="names fds through /proc")
def test_a_file_is_durable_before_it_replaces_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "w.bin"
    events = _record_file_operations(monkeypatch)
    atomic_files.write_file(path, lambda f: f.write(b"data"))
    kinds = [kind for kind, _ in events]
    assert kinds == ["fsync file", "replace", "fsync dir"], events
    assert events[2][1] == str(tmp_path)


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="names fds through /proc")
def test_a_saved_model_switches_once_everything_is_durable(tmp_path, monkeypatch):
    path = tmp_path / "m"
    module = tf.Module()
    module.v = tf.Variable(1.0)
    tf.saved_model.save(module, path)
    old = json.loads((path / "saved_model.json").read_text())["files"]
    events = _record_file_operations(monkeypatch)
    module.v.assign(2.0)
    tf.saved_model.save(module, path)
    switch = events.index(("replace", str(path / "saved_model.json")))
    before, after = events[:switch], events[switch + 1:]
    new = json.loads((path / "saved_model.json").read_text())["files"]
    for name in new.values():       # each data file: written, fsync'ed, renamed, dir fsync'ed
        renamed = before.index(("replace", str(path / name)))
        assert before[renamed - 1][0] == "fsync file"
        assert before[renamed + 1] == ("fsync dir", str((path / name).parent))
    assert ("fsync file", str(path / "saved_model.json")) not in after
    assert after[0] == ("fsync dir", str(path))
    assert sorted(p for kind, p in after if kind == "unlink") == sorted(
        str(path / name) for name in old.values())       # the old version, after the switch
    assert not [e for e in before if e[0] == "unlink"]


def test_a_file_system_that_cannot_sync_directories_gets_one_warning(tmp_path, monkeypatch):
    fsync = os.fsync

    def no_directory_sync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        fsync(fd)
    monkeypatch.setattr(os, "fsync", no_directory_sync)
    monkeypatch.setattr(atomic_files, "_warned_directory_sync", False)
    with pytest.warns(UserWarning, match="cannot sync directories") as caught:
        atomic_files.write_file(tmp_path / "a", lambda f: f.write(b"1"))
        atomic_files.write_file(tmp_path / "b", lambda f: f.write(b"2"))
    assert len([w for w in caught if "cannot sync" in str(w.message)]) == 1
    assert (tmp_path / "b").read_bytes() == b"2"


# ---- SavedModel directories ----------------------------------------------------------------------
def _saved_model(path, value):
    module = tf.Module()
    module.v = tf.Variable(np.float32(value))
    tf.saved_model.save(module, path)


def test_saved_model_removes_only_stale_leftovers(tmp_path):
    path = tmp_path / "m"
    _saved_model(path, 1.0)
    dead, live = _token(_dead_pid()), _token(os.getppid())
    leftovers = {}
    for who, token in (("dead", dead), ("live", live)):
        leftovers[who] = [path / "variables" / f"variables.{token}.npz",
                          path / f"constants.{token}.npz",
                          path / f".saved_model.json.{token}.tmp"]
        for file in leftovers[who]:
            file.write_bytes(b"partial")
    _saved_model(path, 2.0)
    assert float(tf.saved_model.load(path).v.numpy()) == 2.0
    assert not any(file.exists() for file in leftovers["dead"])
    assert all(file.exists() for file in leftovers["live"])


def test_concurrent_saves_into_one_directory(tmp_path):
    path = tmp_path / "m"
    errors = []

    def saver(value):
        module = tf.Module()
        module.v = tf.Variable(np.float32(value))
        try:
            for _ in range(15):
                tf.saved_model.save(module, path)
        except Exception as err:  # noqa: BLE001 -- reported by the assertion below
            errors.append(err)
    threads = [threading.Thread(target=saver, args=(value,)) for value in (1.0, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert float(tf.saved_model.load(path).v.numpy()) in (1.0, 2.0)
    names = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    assert len(names) == 5 and not [n for n in names if n.endswith(".tmp")], names


def test_load_follows_a_save_that_switches_while_it_reads(tmp_path, monkeypatch):
    path = tmp_path / "m"
    _saved_model(path, 1.0)
    read_arrays = array_file.read_arrays
    calls = []

    def read_after_a_concurrent_save(*args, **kwargs):
        if not calls:
            _saved_model(path, 2.0)      # switches, and deletes the files about to be read
        calls.append(args[0])
        return read_arrays(*args, **kwargs)
    monkeypatch.setattr(array_file, "read_arrays", read_after_a_concurrent_save)
    assert float(tf.saved_model.load(path).v.numpy()) == 2.0
    assert len({re.sub(r".*\.(\w+-\d+-\w+)\.npz", r"\1", p) for p in calls}) == 2


@pytest.mark.skipif(os.name == "nt", reason="flock")
def test_a_file_system_without_locks_still_saves_with_one_warning(tmp_path, monkeypatch):
    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(atomic_files.fcntl, "flock", no_locks)
    monkeypatch.setattr(atomic_files, "_warned_no_lock", False)
    with pytest.warns(UserWarning, match="has no file locks") as caught:
        _saved_model(tmp_path / "m", 1.0)
        _saved_model(tmp_path / "m", 2.0)
    assert len([w for w in caught if "no file locks" in str(w.message)]) == 1
    assert float(tf.saved_model.load(tmp_path / "m").v.numpy()) == 2.0

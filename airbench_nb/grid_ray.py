"""Grids past one machine: each run of a grid as a Ray task (``airbench-nb run --grid G.yaml --executor ray``).

This module holds what the grid (:mod:`airbench_nb.grid`) asks of Ray, and nothing of the grid itself: joining a
cluster (:func:`connect`), submitting one run as a task holding the resources the grid file declares
(:func:`submit`), waiting for the next one to end (:func:`wait`) and cancelling the rest (:func:`cancel`).

A run's task does on a node what a local grid does on its own machine: it starts ``python -m airbench_nb.grid``
(the run's job as JSON on stdin, its output appended to ``logs/<run_id>.log`` in the grid folder) and returns the
exit code. The run process is tied to the task's worker (Ray kills a dead worker's child processes, and the run asks
Linux to stop it when its worker dies, see ``grid._die_with``), so a worker or node that dies takes its run with
it, leaving its ``run.json`` unfinished, and Ray runs the task again (``max_retries``): the new attempt resumes the
run in place. A run that fails by its own error is a task that returned: it is
not retried. Every attempt appends a line to ``logs/<run_id>.attempts`` (JSON: attempt, host, pids, start), which
numbers the attempts across workers and nodes.

The grid folder, and the cache folder the runs share, must be the same path on every node (shared storage), since
the task writes there and the grid reads the runs' ``run.json`` from there.

Ray is an optional dependency (``pip install 'airbench-nb[ray]'``); it is imported only when a grid runs on it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'airbench-nb[ray]'"
"""How to get Ray: the kit's optional extra."""

RESOURCE_KEYS: tuple[str, ...] = ("num_cpus", "num_gpus")
"""Keys of a grid file's ``resources:``: what Ray reserves for each run while it runs."""

DEFAULT_RESOURCES: dict[str, float] = {"num_cpus": 1, "num_gpus": 0}
"""Each run's resources when the grid file gives none (a CPU and no GPU, Ray's own default for a task)."""

DEFAULT_RETRIES = 3
"""Times Ray runs a run's task again when its worker or node dies (a grid file's ``retries:`` changes it)."""

WAIT_S = 1.0
"""Longest wait for a task to end before the grid looks at its runs again."""

PREVIOUS_ATTEMPT_S = 60.0
"""Longest wait, on a retry, for the run process of the dead attempt to end (it is stopped with its worker)."""

STOP_S = 10.0
"""Longest wait for a cancelled run to record its stop and end (as a local grid waits for its runs)."""

ATTEMPTS_SUFFIX = ".attempts"
"""Suffix of the ledger of a run's attempts, beside its log."""


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster named cannot be joined."""


@dataclass(frozen=True)
class Executor:
    """Where a grid's runs execute: ``local`` processes, or Ray tasks."""

    kind: str
    """``local`` or ``ray``."""
    address: str | None = None
    """The Ray cluster's address given to ``ray.init`` (None: the cluster of this machine, or a new local one)."""

    def __str__(self) -> str:
        if self.kind == "local":
            return "local"
        if self.address is None:
            return "ray"
        return self.address if self.address.startswith("ray://") else f"ray:{self.address}"


def parse_executor(text: str) -> Executor:
    """Read ``--executor``: ``local``, ``ray``, ``ray:ADDRESS`` (``ray:auto``, ``ray:HOST:6379``) or ``ray://HOST:PORT``.

    ``ray`` joins the cluster of this machine (``RAY_ADDRESS``, or one ``ray start`` started here) or else starts
    a local one; ``ray:ADDRESS`` joins the cluster at ``ADDRESS`` from one of its nodes; ``ray://HOST:PORT`` joins
    it through the Ray Client from anywhere.

    Raises:
        ValueError: Any other spelling (the message lists the valid ones).
    """
    spelling = text.strip()
    if spelling == "local":
        return Executor("local")
    if spelling == "ray":
        return Executor("ray")
    if spelling.startswith("ray://") and len(spelling) > len("ray://"):
        return Executor("ray", spelling)
    if spelling.startswith("ray:") and not spelling.startswith("ray:/") and len(spelling) > len("ray:"):
        return Executor("ray", spelling.removeprefix("ray:"))
    raise ValueError(
        f"executor {text!r}: give local, ray (this machine's cluster, or a new local one), ray:ADDRESS "
        "(e.g. ray:auto, ray:10.0.0.1:6379) or ray://HOST:PORT (the Ray Client)"
    )


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"the ray executor needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def available() -> bool:
    """Whether Ray can be imported here."""
    try:
        _ray()
    except RayUnavailable:
        return False
    return True


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address`` (see :func:`parse_executor`), unless this process is connected already.

    Returns:
        True when this call connected (the caller then disconnects with :func:`disconnect` when done), False when
        Ray was initialised already (a notebook or a test did it: its connection is used as it is).

    Raises:
        RayUnavailable: Ray is not installed, or the cluster cannot be joined (one line, saying why).
    """
    ray = _ray()
    if ray.is_initialized():
        return False
    target = _address_ray_would_join(address)
    try:
        _check_reachable(target)
    except RayUnavailable as exc:
        if target == address:
            raise
        raise RayUnavailable(
            f"{exc}: Ray took that address from RAY_ADDRESS or from the last `ray start` on this machine (a cluster "
            "that ended without `ray stop`?); start the cluster again, or run `ray stop` to forget it"
        ) from None
    options: dict[str, Any] = {"address": address, "logging_level": logging.WARNING, "log_to_driver": False}
    if address is None:
        options["include_dashboard"] = False  # a new local cluster: no dashboard (it needs ray[default])
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayUnavailable(f"cannot join the Ray cluster {address or '(local)'}: {first}") from None
    logger.info("joined the Ray cluster %s: %s", address or "(local)", ray.cluster_resources())
    return True


CONNECT_CHECK_S = 5.0
"""Longest wait for a TCP connection to a cluster's address before ``ray.init`` (which retries for minutes)."""


def _check_reachable(address: str | None) -> None:
    """Refuse at once an address ``HOST:PORT`` (or ``ray://HOST:PORT``) where nothing answers.

    ``ray.init`` itself retries such an address for minutes before it gives up.
    """
    match = re.fullmatch(r"(?:ray://)?\[?([\w.:-]+?)\]?:(\d+)", address or "")
    if match is None:  # None, "auto", "local": Ray finds the cluster itself
        return
    host, port = match.group(1), int(match.group(2))
    try:
        with socket.create_connection((host, port), timeout=CONNECT_CHECK_S):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise RayUnavailable(
            f"cannot join the Ray cluster {address}: nothing answers at {host}:{port} ({why})"
        ) from None


def _address_ray_would_join(address: str | None) -> str | None:
    """The address ``ray.init(address)`` joins (None: a new local cluster starts).

    For None or ``auto``, that is ``RAY_ADDRESS`` or the cluster ``ray start`` last started on this machine.

    Read with Ray's own rule (a private function: None when a Ray version lacks it, and then nothing is checked). A
    cluster that ended without ``ray stop`` leaves its address behind, which ``ray.init`` would retry for minutes.
    """
    if address not in (None, "auto"):
        return address
    try:
        from ray._private.services import get_ray_address_from_environment

        found = get_ray_address_from_environment(address, None)
    except Exception as exc:  # noqa: BLE001 - a Ray without this helper, or no cluster for "auto": ray.init says
        logger.debug("cannot tell which Ray cluster ray.init(%r) joins: %s", address, exc)
        return None
    return found if isinstance(found, str) and found != "auto" else None


def disconnect() -> None:
    """Leave the Ray cluster (stopping it if :func:`connect` started it here)."""
    _ray().shutdown()


def cluster_resources() -> dict[str, float]:
    """The cluster's total resources (``CPU``, ``GPU``, ...), as Ray counts them."""
    return dict(_ray().cluster_resources())


def forwarded_environment() -> dict[str, str]:
    """The kit's own settings (``AIRBENCH_*``) of this process, given to every run's process on the nodes.

    A node's workers have the environment of its ``ray start``, not the grid's: the cache, the notebooks and the
    judge the grid was started with must be passed along. Secrets (API keys) are not: set them on the nodes.
    """
    return {k: v for k, v in os.environ.items() if k.startswith("AIRBENCH_")}


def attempts_path(log: Path) -> Path:
    """The ledger of a run's attempts, beside its log (``logs/<run_id>.attempts``)."""
    return log.with_name(log.stem + ATTEMPTS_SUFFIX)


def read_attempts(log: Path) -> list[dict[str, Any]]:
    """The attempts a run's task made since it was submitted, one record per attempt (unreadable lines skipped)."""
    try:
        lines = attempts_path(log).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def submit(
    job: dict[str, Any],
    log: Path,
    *,
    resources: dict[str, float],
    retries: int,
    environment: dict[str, str],
) -> Any:
    """Submit one run as a Ray task holding ``resources``, run again up to ``retries`` times if its worker dies.

    Args:
        job: The run's job, as a local grid gives it to ``python -m airbench_nb.grid`` (``grid_pid`` is set by the
            task to its own worker's).
        log: The run's log (appended to by every attempt); its attempts ledger is emptied here.
        resources: ``num_cpus`` and ``num_gpus`` of the task.
        retries: Ray's ``max_retries``: attempts after a worker's death. A task that returns (the run ended, ok or
            failed) is never retried, nor one that raised.
        environment: Variables set in the run's process (see :func:`forwarded_environment`).

    Returns:
        The task's ``ObjectRef``: :func:`wait` gives its :class:`TaskResult`.
    """
    attempts_path(log).write_text("", encoding="utf-8")
    task = _remote_task().options(
        name=f"airbench-nb run {job['run_id']}",
        num_cpus=resources.get("num_cpus", DEFAULT_RESOURCES["num_cpus"]),
        num_gpus=resources.get("num_gpus", DEFAULT_RESOURCES["num_gpus"]),
        max_retries=retries,
        retry_exceptions=False,
    )
    return task.remote(job, str(log), environment)


@functools.cache
def _remote_task() -> Any:
    """:func:`_run_task` as a Ray remote function (made once: Ray exports it to the cluster once)."""
    return _ray().remote(_run_task)


@dataclass(frozen=True)
class TaskResult:
    """What a run's task returned, or why it returned nothing."""

    returncode: int | None
    """Exit code of the run's process (None: the task never returned one; see ``error``)."""
    host: str | None = None
    """Host name of the node it ran on."""
    started: datetime | None = None
    """When the last attempt started its run (UTC)."""
    ended: datetime | None = None
    """When the run's process ended (UTC)."""
    error: str | None = None
    """Why the task gave no exit code: its worker died more times than retried, it was cancelled, or it raised."""


def wait(refs: Sequence[Any], timeout_s: float = WAIT_S) -> list[tuple[Any, TaskResult]]:
    """The tasks of ``refs`` that ended within ``timeout_s`` (at least one is waited for), with their results."""
    ray = _ray()
    if not refs:
        return []
    ready, _ = ray.wait(list(refs), num_returns=1, timeout=timeout_s)
    if ready:  # whatever else has ended meanwhile, without waiting
        more, _ = ray.wait([r for r in refs if r not in ready], num_returns=len(refs) - len(ready), timeout=0)
        ready = [*ready, *more]
    out = []
    for ref in ready:
        try:
            value = ray.get(ref)
        except ray.exceptions.RayError as exc:
            out.append((ref, TaskResult(None, error=_task_error(exc))))
            continue
        out.append(
            (
                ref,
                TaskResult(
                    value["returncode"],
                    host=value.get("host"),
                    started=datetime.fromisoformat(value["started"]),
                    ended=datetime.fromisoformat(value["ended"]),
                ),
            )
        )
    return out


def _task_error(exc: BaseException) -> str:
    """One line for a task that gave no result."""
    ray = _ray()
    if isinstance(exc, ray.exceptions.TaskCancelledError):
        return "its Ray task was cancelled"
    if isinstance(exc, ray.exceptions.WorkerCrashedError | ray.exceptions.NodeDiedError):
        return f"its Ray worker died, and again on every retry ({type(exc).__name__})"
    if isinstance(exc, ray.exceptions.OutOfMemoryError):
        return "its Ray worker was killed for memory (Ray's memory monitor), and again on every retry"
    cause = getattr(exc, "cause", None) or exc
    text = " ".join(str(cause).split())
    return f"its Ray task failed: {type(cause).__name__}: {text[:300]}"


def cancel(refs: Sequence[Any]) -> None:
    """Stop the tasks of ``refs`` and wait for them: queued ones never start, running ones stop their run.

    A running task gets a KeyboardInterrupt (``ray.cancel``), sends its run SIGTERM, which the run records in its
    ``run.json`` as a local grid's does, and ends; one still running :data:`STOP_S` seconds later has its worker
    killed (and its run with it, unrecorded).
    """
    ray = _ray()

    def each(force: bool, pending: Sequence[Any]) -> None:
        for ref in pending:
            try:
                ray.cancel(ref, force=force)
            except Exception as exc:  # noqa: BLE001 - a task ended meanwhile, a cluster gone: nothing left to stop
                logger.debug("cancelling a Ray task: %s: %s", type(exc).__name__, exc)

    each(False, refs)
    try:
        _, left = ray.wait(list(refs), num_returns=len(refs), timeout=STOP_S + 5)
    except Exception as exc:  # noqa: BLE001 - the cluster is gone: nothing left to wait for
        logger.debug("waiting for cancelled Ray tasks: %s: %s", type(exc).__name__, exc)
        return
    each(True, left)


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:  # a zombie has ended
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _wait_for_previous(previous: dict[str, Any], host: str) -> None:
    """On a retry, let the dead attempt's run process (stopped with its worker) end first."""
    pid = previous.get("run_pid")
    if previous.get("host") != host or not isinstance(pid, int):
        return  # another node's: its process went with its worker, or its node
    deadline = time.monotonic() + PREVIOUS_ATTEMPT_S
    while not _pid_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def _wait_for(process: subprocess.Popen[bytes]) -> int:
    """The exit code of ``process``, waiting in short steps (a cancel's KeyboardInterrupt lands between them)."""
    while True:
        try:
            return process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            continue


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, which the run records in its ``run.json`` before it ends; SIGKILL after :data:`STOP_S`."""
    process.terminate()
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _run_task(job: dict[str, Any], log: str, environment: dict[str, str]) -> dict[str, Any]:
    """A run's Ray task, on a worker of some node: run ``python -m airbench_nb.grid`` and return its exit code."""
    if threading.current_thread() is threading.main_thread():
        # ray.cancel interrupts a task through Python's SIGINT handler, which a cluster started from a background
        # process (SIGINT ignored there, and inherited) lacks: without it, a cancelled run is killed, unrecorded
        signal.signal(signal.SIGINT, signal.default_int_handler)
    log_path = Path(log)
    host, worker = socket.gethostname(), os.getpid()
    previous = read_attempts(log_path)
    attempt = len(previous) + 1
    run_json = RunFolder(Path(job["reports_dir"]) / job["run_id"]).run_json
    if previous:
        _wait_for_previous(previous[-1], host)
    job = {
        **job,
        "grid_pid": worker,  # the run stops with this worker (as a local run stops with its grid)
        "resume": bool(job.get("resume")) or (bool(previous) and run_json.is_file()),  # a retry resumes in place
    }
    started = datetime.now(UTC)
    with log_path.open("ab") as out:  # the grid removed the log of a new run; a resumed run's is appended to
        out.write(f"--- attempt {attempt} on {host} (Ray worker pid {worker}), {started.isoformat()}\n".encode())
        out.flush()
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "airbench_nb.grid"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **environment},
        )
        record = {"attempt": attempt, "host": host, "worker_pid": worker, "run_pid": process.pid}
        with attempts_path(log_path).open("a", encoding="utf-8") as ledger:
            ledger.write(json.dumps({**record, "started": started.isoformat()}) + "\n")
        assert process.stdin is not None
        process.stdin.write(json.dumps(job).encode("utf-8"))
        process.stdin.close()
        try:
            returncode = _wait_for(process)
        except KeyboardInterrupt:  # ray.cancel: stop the run as a local grid does (it records the stop), then end
            _stop(process)
            raise
    return {
        "returncode": returncode,
        "host": host,
        "started": started.isoformat(),
        "ended": datetime.now(UTC).isoformat(),
    }

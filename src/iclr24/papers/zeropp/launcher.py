"""Start N local ranks (processes) for a ZeRO++ job: as a Python function or as a command.

From Python (the function must be importable, i.e. defined at module level)::

    from iclr24.papers.zeropp import launch
    results = launch(my_fn, nproc=4, nodes=2, args=(cfg,))   # my_fn(comm, cfg) on every rank

From the shell (like ``torchrun``; the script calls :func:`init_distributed`)::

    python -m iclr24.papers.zeropp.launch --nproc 4 --nodes 2 script.py [script args]

Either way: a free TCP port on 127.0.0.1 is chosen at run time, every rank runs with
``OMP_NUM_THREADS=1`` (4 ranks on a 2-core machine would otherwise oversubscribe it), ranks are
numbered node-major over ``nodes`` simulated nodes, and every point-to-point wait has a timeout.
If one rank fails, the launcher stops the others at once and reports which rank failed and why
(its traceback), instead of leaving the job hanging in a collective.

The command line lives in :mod:`.launch` (a thin entry point over :func:`main`), so that
``python -m`` does not run a module the package has already imported.

Backend: gloo (CPU) by default; ``backend="nccl"`` puts payloads on each rank's GPU.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import pickle
import queue as queue_mod
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from .topology import Topology

__all__ = ["RankFailedError", "find_free_port", "init_distributed", "launch", "main"]

ENV_NODES = "ZEROPP_NODES"


class RankFailedError(RuntimeError):
    """A rank of a launched job failed (raised, crashed, or timed out)."""

    def __init__(self, rank: int, detail: str) -> None:
        super().__init__(f"rank {rank} failed; the other ranks were stopped.\n{detail}")
        self.rank = rank


def find_free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _check_sizes(nproc: int, nodes: int) -> Topology:
    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"nproc must be a positive int, got {nproc!r}")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise ValueError(f"nodes must be a positive int, got {nodes!r}")
    if nproc % nodes:
        raise ValueError(f"nproc ({nproc}) must be divisible by nodes ({nodes})")
    return Topology.from_nodes(nproc, nodes)


def init_distributed(timeout_s: float = 60.0, backend: str = "gloo"):
    """Join the job described by the environment; return this rank's ``Communicator``.

    Reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and the node layout from
    ``ZEROPP_NODES`` (set by this launcher) or ``LOCAL_WORLD_SIZE`` (set by ``torchrun``).
    """
    import torch
    import torch.distributed as dist

    from .transport import Communicator, DistTransport

    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if k not in os.environ]
    if missing:
        raise RuntimeError(f"environment variables {missing} are not set; start the script with "
                           "`python -m iclr24.papers.zeropp.launch --nproc N --nodes n script.py`")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if ENV_NODES in os.environ:
        topo = Topology.from_nodes(world, int(os.environ[ENV_NODES]))
    else:
        topo = Topology(world, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    if not dist.is_initialized():
        init = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                timeout=timedelta(seconds=timeout_s))
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        device = f"cuda:{torch.cuda.current_device()}"
    return Communicator(rank, topo, DistTransport(timeout_s, device))


def _worker(fn: Callable[..., Any], rank: int, nproc: int, nodes: int, port: int,
            args: Sequence[Any], results: Any, timeout_s: float, backend: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(nproc),
                      LOCAL_RANK=str(rank % (nproc // nodes)),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    os.environ[ENV_NODES] = str(nodes)
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        comm = init_distributed(timeout_s, backend)
        try:
            out = fn(comm, *args)
        except BaseException:  # noqa: BLE001 - report before tearing down the process group
            _report_failure(rank, results)
        if dist.is_initialized():
            dist.destroy_process_group()
        results.put((rank, "ok", pickle.dumps(out)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which stops the job
        _report_failure(rank, results)


def _report_failure(rank: int, results: Any) -> None:
    """Send (time, traceback) to the parent and exit. The time stamp lets the parent blame the
    rank that failed first: a crash on one rank makes its peers' collectives fail a moment later."""
    results.put((rank, "error", (time.time(), traceback.format_exc())))
    results.close()
    results.join_thread()
    os._exit(1)


def _stop(procs: Sequence[Any]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 5.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()


def launch(fn: Callable[..., Any], nproc: int, nodes: int = 1, args: Sequence[Any] = (),
           timeout_s: float = 600.0, collective_timeout_s: float = 60.0,
           backend: str = "gloo", start_method: str = "spawn") -> list[Any]:
    """Run ``fn(comm, *args)`` on ``nproc`` new processes; return the results by rank.

    fn: a module-level function (it is pickled to the children); its return value must pickle.
    nodes: simulated nodes (``nproc / nodes`` ranks each, node-major).
    timeout_s: wall-clock limit for the whole job; collective_timeout_s: per message wait.
    Raises :class:`RankFailedError` naming the first rank that failed, with its traceback.
    """
    _check_sizes(nproc, nodes)
    if not callable(fn):
        raise TypeError("fn must be a module-level callable fn(comm, *args)")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    ctx = mp.get_context(start_method)
    results = ctx.Queue()
    port = find_free_port()
    old_omp = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"  # children read it when they import torch
    procs = []
    try:
        for rank in range(nproc):
            p = ctx.Process(target=_worker, name=f"zeropp-rank{rank}", daemon=True,
                            args=(fn, rank, nproc, nodes, port, tuple(args), results,
                                  collective_timeout_s, backend))
            p.start()
            procs.append(p)
    finally:
        if old_omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = old_omp
    out: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s

    def first_failure(rank: int, report: tuple[float, str]) -> RankFailedError:
        """Collect the error reports that arrive within a grace period; blame the earliest."""
        reports = {rank: report}
        grace = time.monotonic() + 2.0
        while time.monotonic() < grace:
            try:
                other, status, payload = results.get(timeout=0.1)
            except queue_mod.Empty:
                continue
            if status == "error":
                reports[other] = payload
        culprit = min(reports, key=lambda r: reports[r][0])
        return RankFailedError(culprit, reports[culprit][1])

    try:
        while len(out) < nproc:
            try:
                rank, status, payload = results.get(timeout=0.1)
            except queue_mod.Empty:
                for rank, p in enumerate(procs):
                    if rank not in out and p.exitcode not in (None, 0):
                        try:  # a late error report beats "exit code 1"
                            rank2, status, payload = results.get(timeout=1.0)
                            if status == "error":
                                raise first_failure(rank2, payload) from None
                        except queue_mod.Empty:
                            pass
                        raise RankFailedError(rank, f"process exited with code {p.exitcode} "
                                                    "without reporting a result")
                if time.monotonic() > deadline:
                    pending = sorted(set(range(nproc)) - set(out))
                    raise TimeoutError(f"job did not finish within {timeout_s:.0f}s; ranks "
                                       f"{pending} still running (stopped now)")
                continue
            if status == "error":
                raise first_failure(rank, payload)
            out[rank] = pickle.loads(payload)
        for p in procs:
            p.join(10.0)
    finally:
        _stop(procs)
    return [out[r] for r in range(nproc)]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m iclr24.papers.zeropp.launch --nproc N --nodes n script.py [args]``."""
    parser = argparse.ArgumentParser(
        prog="python -m iclr24.papers.zeropp.launch",
        description="Start N local ranks of a script that calls "
                    "iclr24.papers.zeropp.init_distributed().")
    parser.add_argument("--nproc", type=int, required=True, help="number of ranks (processes)")
    parser.add_argument("--nodes", type=int, default=1, help="simulated nodes (node-major ranks)")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="wall-clock limit in seconds for the whole job (0: none)")
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    try:
        _check_sizes(ns.nproc, ns.nodes)
    except ValueError as exc:
        parser.error(str(exc))
    if not os.path.isfile(ns.script):
        parser.error(f"script {ns.script!r} does not exist")
    port = find_free_port()
    procs = []
    for rank in range(ns.nproc):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ns.nproc),
                   LOCAL_RANK=str(rank % (ns.nproc // ns.nodes)),
                   LOCAL_WORLD_SIZE=str(ns.nproc // ns.nodes), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        env[ENV_NODES] = str(ns.nodes)
        procs.append(subprocess.Popen([sys.executable, ns.script, *ns.script_args], env=env))
    deadline = time.monotonic() + ns.timeout if ns.timeout > 0 else None
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                print(f"zeropp.launch: rank {rank} exited with code {code}; stopping the other "
                      "ranks", file=sys.stderr)
                return 1
            if all(c == 0 for c in codes):
                return 0
            if deadline is not None and time.monotonic() > deadline:
                print(f"zeropp.launch: job exceeded --timeout {ns.timeout:.0f}s; stopping it",
                      file=sys.stderr)
                return 124
            time.sleep(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(5.0)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()



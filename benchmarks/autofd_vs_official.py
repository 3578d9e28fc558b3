"""Time ``iclr24.papers.autofd`` against the official ``autofd`` 0.0.9 on seven workloads.

For each functional (int f^4, int e^f, int f'^2, LDA exchange, a nonlocal double integral
int int k(x, y) f(x) f(y), the brachistochrone travel time) and each round, both libraries
build a *new* Function from the same code (as a user re-running a cell does); the seventh,
"loop int f^4", is a functional-optimisation step: every Function is
``lambda t, c=c: c + 0.3 sin t`` with a *new* closure constant ``c`` (as each step of a
functional gradient descent makes one). Both libraries time

* ``F(f)``             the functional's value (quadrature on the function's grid),
* ``jax.grad(F)(f)``   building the functional derivative (a callable Function),
* ``eval grad``        evaluating that derivative at 64 points (``jax.vmap(dF)(xs)``),

single-threaded, as process CPU time (``time.process_time``, robust to other load on a shared
machine). Rounds alternate between the two libraries (ours, official, ours, ...); the table
reports the median over the warm rounds (round 0, which compiles, is printed separately) and
the ratio ours / official (< 1: ours is faster). Values and gradients of both libraries are
compared, so a speed-up can never hide a wrong answer.

The official package pins an old JAX (autofd 0.0.9 runs on jax 0.5.3 only; see
/work/shared/ECOSYSTEM.md), so it lives in a separate virtual environment and runs in a
subprocess; the project's own environment stays on its pinned JAX. Set it up once::

    python3 -m venv /tmp/autofd_official
    /tmp/autofd_official/bin/pip install autofd==0.0.9 jax==0.5.3 jaxlib==0.5.3 \\
        jaxtyping absl-py        # autofd imports both without declaring them

and run (from the repository root)::

    .venv/bin/python benchmarks/autofd_vs_official.py \\
        [--official-python /tmp/autofd_official/bin/python] [--rounds 7]

``--official-python`` defaults to ``$AUTOFD_OFFICIAL_PYTHON``, then to
``/tmp/autofd_official/bin/python``. ``--side ours|official`` runs one library alone (the
subprocess mode; prints one JSON line per round).
"""

# no "from __future__ import annotations": the official package reads jaxtyping annotations

import os

# single-threaded XLA, set before jax is imported (in both processes)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

NAMES = ("int f^4", "int e^f", "int f'^2", "LDA exchange", "nonlocal", "brachistochrone",
         "loop int f^4")
OPS = ("F(f)", "jax.grad(F)(f)", "eval grad")
LDA_C = -0.75 * (3.0 / np.pi) ** (1.0 / 3.0)


def _grids() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    s, w = np.polynomial.legendre.leggauss(64)
    sn, wn = np.polynomial.legendre.leggauss(40)
    t, wt = np.polynomial.legendre.leggauss(50)
    t, wt = 0.5 * (t + 1), 0.5 * wt
    return {"line": (4.0 * s, 4.0 * w), "nonlocal": (4.0 * sn, 4.0 * wn),
            "brach": (t**2, 2.0 * t * wt)}  # x = s^2: the 1/sqrt(-y) singularity at 0


def _query(name: str) -> np.ndarray:
    if name == "brachistochrone":
        return np.linspace(0.05, 0.95, 64)
    return np.linspace(-1.5, 1.5, 64)


def _cases_ours() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import jax.numpy as jnp

    from iclr24.papers.autofd import (
        Function,
        Grid,
        brachistochrone_integrand,
        broadcast_arg,
        compose,
        fnp,
        integrate,
        nabla,
    )
    g = _grids()
    line = Grid((g["line"][0],), (g["line"][1],))
    xn, wn = g["nonlocal"]
    two = Grid((xn, xn), (wn, wn))
    brach = Grid((g["brach"][0],), (g["brach"][1],))

    def gauss(grid: Any) -> Callable[[], Any]:
        return lambda: Function(lambda x: jnp.exp(-x**2), [()], (), grid)

    def curve() -> Any:
        return Function(lambda x: -x - 0.3 * jnp.sin(jnp.pi * x), [()], (), brach)

    def nonlocal_energy(f: Any) -> Any:
        k = Function(lambda x, y: jnp.exp(-(x - y) ** 2), [(), ()], (), two)
        return integrate(k * broadcast_arg(f, k, 0) * broadcast_arg(f, k, 1))

    step = itertools.count()

    def loop_step() -> Any:  # a new closure constant at every call
        c = 0.01 * next(step)
        return Function(lambda t, c=c: c + 0.3 * jnp.sin(t), [()], (), line)

    return {
        "int f^4": (gauss(line), lambda f: integrate(f**4)),
        "int e^f": (gauss(line), lambda f: integrate(fnp.exp(f))),
        "int f'^2": (gauss(line), lambda f: integrate(nabla(f) ** 2)),
        "LDA exchange": (gauss(line), lambda f: integrate(
            compose(lambda r: LDA_C * r ** (4.0 / 3.0), f))),
        "nonlocal": (gauss(Grid((xn,), (wn,))), nonlocal_energy),
        "brachistochrone": (curve, lambda y: integrate(
            compose(brachistochrone_integrand, y, nabla(y)))),
        "loop int f^4": (loop_step, lambda f: integrate(f**4)),
    }


def _cases_official() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import autofd.operators as o
    import jax.numpy as jnp
    from autofd import function
    from autofd.general_array import Grid
    from jaxtyping import Array, Float64

    g = _grids()
    as_grid = lambda *e: Grid(tuple(jnp.asarray(n) for n, _ in e),
                              tuple(jnp.asarray(w) for _, w in e))

    def gauss(entry: tuple[np.ndarray, np.ndarray]) -> Callable[[], Any]:
        def make() -> Any:
            @function
            def f(x: Float64[Array, ""]) -> Float64[Array, ""]:
                return jnp.exp(-x**2)
            f.grid = as_grid(entry)
            return f
        return make

    def curve() -> Any:
        @function
        def y(x: Float64[Array, ""]) -> Float64[Array, ""]:
            return -x - 0.3 * jnp.sin(jnp.pi * x)
        y.grid = as_grid(g["brach"])
        return y

    def nonlocal_energy(f: Any) -> Any:
        @function
        def k(x: Float64[Array, ""], y: Float64[Array, ""]) -> Float64[Array, ""]:
            return jnp.exp(-(x - y) ** 2)
        k.grid = as_grid(g["nonlocal"], g["nonlocal"])
        integrand = k * o.broadcast_arg(f, k, argnums=0) * o.broadcast_arg(f, k, argnums=1)
        return o.integrate(integrand, argnums=(0, 1))

    step = itertools.count()

    def loop_step() -> Any:  # a new closure constant at every call
        c = 0.01 * next(step)

        @function
        def f(t: Float64[Array, ""]) -> Float64[Array, ""]:
            return c + 0.3 * jnp.sin(t)
        f.grid = as_grid(g["line"])
        return f

    def brach(y: Any) -> Any:
        def lagrangian(v: Any, dv: Any) -> Any:
            return jnp.sqrt(1.0 + dv**2) / jnp.sqrt(-v)
        return o.integrate(o.compose(lagrangian, y, o.nabla(y), share_inputs=True))

    return {
        "int f^4": (gauss(g["line"]), lambda f: o.integrate(f**4)),
        "int e^f": (gauss(g["line"]), lambda f: o.integrate(o.numpy.exp(f))),
        "int f'^2": (gauss(g["line"]), lambda f: o.integrate(o.nabla(f) ** 2)),
        "LDA exchange": (gauss(g["line"]), lambda f: o.integrate(
            o.compose(lambda r: LDA_C * r ** (4.0 / 3.0), f))),
        "nonlocal": (gauss(g["nonlocal"]), nonlocal_energy),
        "brachistochrone": (curve, brach),
        "loop int f^4": (loop_step, lambda f: o.integrate(f**4)),
    }


def _one_round(cases: dict[str, Any]) -> dict[str, Any]:
    """One timed pass over the six functionals: {name: {op: seconds, values...}}."""
    import jax
    out = {}
    for name in NAMES:
        make, F = cases[name]
        xs = jax.numpy.asarray(_query(name))
        row: dict[str, Any] = {}
        f = make()
        t = time.process_time()
        value = jax.block_until_ready(F(f))
        row["F(f)"] = time.process_time() - t
        f = make()
        t = time.process_time()
        dF = jax.grad(F)(f)
        row["jax.grad(F)(f)"] = time.process_time() - t
        t = time.process_time()
        vals = jax.block_until_ready(jax.vmap(dF)(xs))
        row["eval grad"] = time.process_time() - t
        row["value"] = float(value)
        row["grad"] = np.asarray(vals).tolist()
        out[name] = row
    return out


def _side(which: str) -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    cases = _cases_ours() if which == "ours" else _cases_official()
    for line in sys.stdin:  # one round per request line, so the caller can interleave
        if line.strip() != "round":
            break
        print("ROUND " + json.dumps(_one_round(cases)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official-python", default=os.environ.get(
        "AUTOFD_OFFICIAL_PYTHON", "/tmp/autofd_official/bin/python"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--side", choices=("ours", "official"))
    args = ap.parse_args()
    if args.side:
        _side(args.side)
        return
    if not os.path.exists(args.official_python):
        sys.exit(f"official autofd python not found at {args.official_python!r}; see the "
                 "docstring for how to install it, or pass --official-python")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    procs = {
        "ours": subprocess.Popen([sys.executable, __file__, "--side", "ours"], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True),
        "official": subprocess.Popen([args.official_python, __file__, "--side", "official"],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True),
    }
    rounds: dict[str, list[dict[str, Any]]] = {"ours": [], "official": []}
    for _ in range(args.rounds):
        for side, p in procs.items():  # interleaved: ours, official, ours, official, ...
            p.stdin.write("round\n")
            p.stdin.flush()
            while True:  # the official package prints a banner on import; skip non-results
                line = p.stdout.readline()
                if not line:
                    sys.exit(f"the {side} process ended early (exit {p.wait()})")
                if line.startswith("ROUND "):
                    rounds[side].append(json.loads(line[6:]))
                    break
    for p in procs.values():
        p.stdin.close()
        p.wait()

    print(f"CPU seconds per call, single-threaded; median of {args.rounds - 1} warm rounds "
          "(round 0 = first call, compiles)")
    header = f"{'functional':<16} {'operation':<15} {'ours':>10} {'official':>10} {'ratio':>7}"
    print(header + f"   {'ours r0':>9} {'off. r0':>9}")
    print("-" * (len(header) + 22))
    worst = {op: 0.0 for op in OPS}
    for name in NAMES:
        for op in OPS:
            med = {s: statistics.median(r[name][op] for r in rounds[s][1:]) for s in rounds}
            ratio = med["ours"] / med["official"]
            worst[op] = max(worst[op], ratio)
            print(f"{name:<16} {op:<15} {med['ours'] * 1e3:>8.2f}ms "
                  f"{med['official'] * 1e3:>8.2f}ms {ratio:>7.2f}   "
                  f"{rounds['ours'][0][name][op] * 1e3:>7.1f}ms "
                  f"{rounds['official'][0][name][op] * 1e3:>7.1f}ms")
    print()
    print("largest ratio ours/official: " + ", ".join(f"{op} {v:.2f}" for op, v in worst.items()))
    print("agreement (max |ours - official| over rounds' last values):")
    for name in NAMES:
        a, b = rounds["ours"][-1][name], rounds["official"][-1][name]
        dv = abs(a["value"] - b["value"])
        dg = float(np.max(np.abs(np.asarray(a["grad"]) - np.asarray(b["grad"]))))
        print(f"  {name:<16} F {a['value']:+.12f}  |dF| {dv:.1e}  |d grad| {dg:.1e}")


if __name__ == "__main__":
    main()

"""Real multi-process runs over gloo, failure handling, and the command-line launcher.

These start processes, so they are few and short; each has a timeout and none can hang.
"""

import textwrap
import time

import pytest
import torch

from iclr24.papers.zeropp import (
    RankFailedError,
    Topology,
    ZeroPPConfig,
    ZeroPPEngine,
    find_free_port,
    launch,
    ring_all_gather,
    run_simulated,
)
from iclr24.papers.zeropp.launcher import main
from iclr24.papers.zeropp.training_runs import mlp, mlp_from_state

pytestmark = pytest.mark.serial  # four gloo ranks want the cores to themselves


def _crash_on_rank_1(comm):
    if comm.rank == 1:
        raise RuntimeError("deliberate failure on rank 1")
    # rank 0 waits in a collective for a message that will never come
    return ring_all_gather(comm, torch.zeros(4, dtype=torch.uint8), [0, 1], "x")


def _forward_backward(comm, sizes, state, x, y, config):
    """One ZeRO++ forward/backward (no optimizer: children skip torch.optim's slow import)."""
    engine = ZeroPPEngine(mlp_from_state(sizes, state), None, comm, config=config)
    comm.ledger.reset()
    b = len(y) // comm.world_size
    sl = slice(comm.rank * b, (comm.rank + 1) * b)
    loss = torch.nn.functional.cross_entropy(engine(x[sl]), y[sl])
    engine.backward(loss)
    return float(loss.detach()), [s.grad.clone() for s in engine.shards], comm.ledger.snapshot()


@pytest.mark.timeout(120)
def test_four_gloo_processes_match_the_simulator_bit_for_bit():
    sizes = [64, 32, 10]
    g = torch.Generator().manual_seed(0)
    args = (sizes, mlp(sizes, 0).state_dict(), torch.randn(32, 64, generator=g),
            torch.randint(0, 10, (32,), generator=g), ZeroPPConfig(8, True, 4, block_size=256))
    sim = run_simulated(_forward_backward, Topology(4, 2), args)
    real = launch(_forward_backward, nproc=4, nodes=2, args=args, timeout_s=110)
    for (rl, rg, rledger), (sl, sg, sledger) in zip(real, sim):
        assert rl == sl
        assert rledger == sledger
        assert all(torch.equal(a, b) for a, b in zip(rg, sg))
    assert len({loss for loss, _, _ in real}) == 4  # each rank saw its own micro-batch


@pytest.mark.timeout(120)
def test_a_failing_rank_stops_the_job_fast_with_its_traceback():
    start = time.monotonic()
    with pytest.raises(RankFailedError, match="rank 1 failed") as info:
        launch(_crash_on_rank_1, nproc=2, nodes=1, timeout_s=100, collective_timeout_s=90)
    assert "deliberate failure on rank 1" in str(info.value)
    assert info.value.rank == 1
    assert time.monotonic() - start < 90  # not the collective timeout: the launcher stopped it


@pytest.mark.timeout(60)
def test_cli_launcher_sets_the_environment(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import os, pathlib, sys
        keys = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                "OMP_NUM_THREADS", "ZEROPP_NODES"]
        out = pathlib.Path(sys.argv[1]) / f"rank{os.environ['RANK']}.txt"
        out.write_text(" ".join(os.environ[k] for k in keys))
    """))
    assert main(["--nproc", "4", "--nodes", "2", str(script), str(tmp_path)]) == 0
    lines = sorted((tmp_path / f"rank{r}.txt").read_text().split() for r in range(4))
    assert [ln[0] for ln in lines] == ["0", "1", "2", "3"]
    assert {ln[1] for ln in lines} == {"4"} and [ln[2] for ln in lines] == ["0", "1", "0", "1"]
    assert {ln[5] for ln in lines} == {"1"} and {ln[6] for ln in lines} == {"2"}


@pytest.mark.timeout(60)
def test_cli_launcher_fails_fast_when_a_rank_dies(tmp_path, capsys):
    script = tmp_path / "die.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['RANK'] == '1':\n    sys.exit(3)\n"
                      "time.sleep(50)\n")
    start = time.monotonic()
    assert main(["--nproc", "2", str(script)]) == 1
    assert time.monotonic() - start < 30
    assert "rank 1 exited with code 3" in capsys.readouterr().err


def test_launch_argument_errors():
    with pytest.raises(ValueError, match="divisible"):
        launch(_crash_on_rank_1, nproc=3, nodes=2)
    with pytest.raises(ValueError, match="nproc"):
        launch(_crash_on_rank_1, nproc=0)
    with pytest.raises(ValueError, match="backend"):
        launch(_crash_on_rank_1, nproc=2, backend="mpi")
    with pytest.raises(SystemExit):
        main(["--nproc", "2", "/nonexistent/script.py"])
    assert 0 < find_free_port() < 65536

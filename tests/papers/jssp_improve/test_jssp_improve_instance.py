"""Instances: validation at the boundary, the generator, and the classic-file reader (ft06 with
its known optimum 55 as a known-answer check)."""

import numpy as np
import pytest

from iclr24.papers.jssp_improve import JSSPInstance, cp_sat_solve, load_classic, random_instance

# Fisher & Thompson ft06 in OR-Library format (machine, time pairs, 0-based machines); optimum 55
FT06 = """# ft06
6 6
2 1 0 3 1 6 3 7 5 3 4 6
1 8 2 5 4 10 5 10 0 10 3 4
2 5 3 4 5 8 0 9 1 1 4 7
1 5 0 5 2 5 3 3 4 8 5 9
2 9 1 3 4 5 5 4 0 3 3 1
1 3 3 3 5 9 0 10 4 4 2 1
"""


def test_instance_validation_errors():
    d = np.ones((2, 3), dtype=int)
    with pytest.raises(ValueError, match="machines\\[1\\] must be a permutation"):
        JSSPInstance(d, np.array([[0, 1, 2], [0, 0, 2]]))
    with pytest.raises(ValueError, match="durations must be positive"):
        JSSPInstance(np.array([[1, 0, 2], [1, 1, 1]]), np.array([[0, 1, 2], [2, 1, 0]]))
    with pytest.raises(ValueError, match="durations must be positive"):
        JSSPInstance(np.array([[1, -3, 2], [1, 1, 1]]), np.array([[0, 1, 2], [2, 1, 0]]))
    with pytest.raises(ValueError, match="same shape"):
        JSSPInstance(np.ones((2, 2), dtype=int), np.array([[0, 1, 2], [2, 1, 0]]))
    with pytest.raises(ValueError, match="integers"):
        JSSPInstance(np.full((1, 2), 1.5), np.array([[0, 1]]))
    with pytest.raises(TypeError, match="integer array"):
        JSSPInstance(np.array([["a", "b"]]), np.array([[0, 1]]))
    with pytest.raises(ValueError, match="2-D"):
        JSSPInstance(np.ones(3, dtype=int), np.arange(3))


def test_instance_nodes_and_op_index():
    inst = JSSPInstance(np.array([[3, 2, 1], [4, 5, 6]]), np.array([[2, 0, 1], [0, 1, 2]]))
    assert inst.n_nodes == 8
    np.testing.assert_array_equal(inst.node_durations(), [0, 3, 2, 1, 4, 5, 6, 0])
    # op_index[j, i] = position of machine i in job j's route
    np.testing.assert_array_equal(inst.op_index, [[1, 2, 0], [0, 1, 2]])


def test_random_instance_generator():
    a = random_instance(5, 4, 1, 99, seed=3)
    b = random_instance(5, 4, 1, 99, seed=3)
    np.testing.assert_array_equal(a.durations, b.durations)
    np.testing.assert_array_equal(a.machines, b.machines)
    assert a.durations.min() >= 1 and a.durations.max() <= 99
    big = random_instance(40, 10, 1, 3, seed=0)
    assert set(np.unique(big.durations)) == {1, 2, 3}  # inclusive bounds
    assert not np.array_equal(big.machines[0], big.machines[1])
    with pytest.raises(ValueError, match="n_jobs"):
        random_instance(0, 3)
    with pytest.raises(ValueError, match="low"):
        random_instance(3, 3, 5, 2)


def test_load_classic_orlib_ft06_known_optimum(tmp_path):
    f = tmp_path / "ft06.txt"
    f.write_text(FT06)
    inst = load_classic(f)
    assert inst.name == "ft06" and inst.durations.shape == (6, 6)
    assert inst.machines[0].tolist() == [2, 0, 1, 3, 5, 4]
    assert inst.durations[0].tolist() == [1, 3, 6, 7, 3, 6]
    sched, obj, optimal = cp_sat_solve(inst, time_limit=20.0)
    assert optimal and obj == 55  # the published optimum of ft06
    assert sched.makespan() == 55


def test_load_classic_taillard_equals_orlib(tmp_path):
    orlib = tmp_path / "tiny.txt"
    orlib.write_text("2 3\n0 5 1 3 2 4\n2 2 0 7 1 1\n")
    tai = tmp_path / "tiny_ta.txt"
    tai.write_text("Nb of jobs, Nb of Machines, Time seed, Machine seed, Upper bound, Lower bound\n"
                   "2 3 123 456 20 10\nTimes\n5 3 4\n2 7 1\nMachines\n1 2 3\n3 1 2\n")
    a, b = load_classic(orlib), load_classic(tai, name="x")
    np.testing.assert_array_equal(a.durations, b.durations)
    np.testing.assert_array_equal(a.machines, b.machines)
    assert b.name == "x"


def test_load_classic_errors(tmp_path):
    with pytest.raises(ValueError, match="existing instance file"):
        load_classic(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\n0 5 1 3\n")
    with pytest.raises(ValueError, match="expected 12 numbers"):
        load_classic(bad)
    badm = tmp_path / "badm.txt"
    badm.write_text("1 2\n0 5 0 3\n")
    with pytest.raises(ValueError, match="permutation"):
        load_classic(badm)

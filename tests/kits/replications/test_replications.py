import numpy as np
import pytest

from iclr24.kits.replications import replicate, spawn_generators

# a module-level library function: the test module itself is not importable in loky workers
# (pytest's importlib mode), so the parallel path gets a function pickled by reference
_draw = np.random.Generator.standard_normal


def test_generators_are_independent_and_reproducible():
    a = [g.random() for g in spawn_generators(3, 4)]
    b = [g.random() for g in spawn_generators(3, 4)]
    assert a == b
    assert len(set(a)) == 4


def test_one_and_two_workers_agree():
    one = replicate(_draw, 4, 7, 3)
    two = replicate(_draw, 4, 7, 3, n_jobs=2)
    np.testing.assert_array_equal(np.array(one), np.array(two))
    assert not np.allclose(one[0], one[1])


def test_seed_changes_results():
    assert not np.allclose(replicate(_draw, 2, 0, 3)[0], replicate(_draw, 2, 1, 3)[0])


@pytest.mark.parametrize("n, seed", [(0, 0), (True, 0), (2, -1), (2, 1.5)])
def test_bad_input(n, seed):
    with pytest.raises(ValueError):
        spawn_generators(seed, n)


def test_bad_fn_and_jobs():
    with pytest.raises(TypeError, match="fn"):
        replicate(3, 2, 0)
    with pytest.raises(ValueError, match="n_jobs"):
        replicate(_draw, 2, 0, 3, n_jobs=0)

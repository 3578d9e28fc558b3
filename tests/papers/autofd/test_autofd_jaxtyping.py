"""Function specs read from jaxtyping annotations (the official package's way to declare them).

No ``from __future__ import annotations`` here: the annotations are evaluated as written.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from jaxtyping import Array, Float, Float32, Float64

from iclr24.papers.autofd import Grid, Spec, function


def test_jaxtyping_annotations():
    @function
    def f(x: Float[Array, "3"], t: Float64[Array, ""]) -> Float32[Array, ""]:
        return jnp.sum(x) * t
    assert f.arg_spec == (Spec((3,), jnp.float32), Spec((), np.float64))
    assert f.ret_spec == Spec((), jnp.float32)
    assert float(f(jnp.ones(3), 2.0)) == 6.0

    @function(grid=Grid((jnp.zeros((4, 2)),), (jnp.ones(4),)))
    def g(x: Float[Array, "2"]) -> Float[Array, "2 2"]:
        return jnp.outer(x, x)
    assert g.ret_spec.shape == (2, 2) and g.grid is not None
    with pytest.raises(TypeError, match="fixed integer dimensions"):
        @function
        def h(x: Float[Array, "n"]) -> Float[Array, ""]:  # noqa: F821 - a symbolic dim
            return x
    with pytest.raises(ValueError, match="ret_spec"):  # the body must honour its annotation
        @function
        def bad(x: Float[Array, ""]) -> Float[Array, "2"]:
            return x
        bad(1.0)

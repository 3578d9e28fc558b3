"""Alpha: a fake paper used by the framework's tests."""

__all__ = ["double"]


def double(x: float) -> float:
    return 2 * x

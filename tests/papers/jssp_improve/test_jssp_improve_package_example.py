"""The runnable example of the package docstring runs and its checks hold."""

import doctest

import iclr24.papers.jssp_improve as package


def test_package_docstring_example_runs(one_torch_thread):
    result = doctest.testmod(package, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0

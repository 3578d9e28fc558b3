"""Command line: ``python -m iclr24.papers.zeropp.launch --nproc 4 --nodes 2 script.py``.

Starts ``--nproc`` local ranks of ``script.py`` (free port, ``OMP_NUM_THREADS=1``, node-major
ranks over ``--nodes`` simulated nodes); the script calls
:func:`iclr24.papers.zeropp.init_distributed`. If a rank exits with an error the others are
stopped at once. The implementation is :func:`iclr24.papers.zeropp.launcher.main`.
"""

import sys

from .launcher import main

if __name__ == "__main__":
    sys.exit(main())

"""Local image sources for the vision papers: nothing here downloads.

- :mod:`.dead_leaves`: the dead-leaves natural-image model (power-law disc radii) and the
  supervised task of telling its radius exponent.
- :mod:`.natural_crops`: seeded grey crops of scikit-learn's two bundled photographs and the
  digits set upsampled (a supervised sanity set).
- :mod:`.rotation`: random crops and the 4-way rotation pretext task.

Usage::

    from iclr24.kits.image_sources import dead_leaves, random_crops, rotation_batch
    pool = dead_leaves(64, size=64, seed=0)                  # (64, 64, 64) in [0, 1]
    rng = np.random.default_rng(0)
    x, y = rotation_batch(random_crops(pool, 32, 32, rng), rng)
"""

from .dead_leaves import dead_leaves, dead_leaves_exponents, power_law_radii
from .natural_crops import digits_images, grey_sample_images, sample_image_crops
from .rotation import random_crops, rotation_batch

__all__ = [
    "dead_leaves",
    "dead_leaves_exponents",
    "digits_images",
    "grey_sample_images",
    "power_law_radii",
    "random_crops",
    "rotation_batch",
    "sample_image_crops",
]

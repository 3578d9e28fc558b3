"""Cosmos: Neurosymbolic Grounding for Compositional World Models (A. Sehgal, A. Grayeli,
J. J. Sun, S. Chaudhuri; ICLR 2024; arXiv 2310.12690; code announced at trishullab/cosmos, not
released in the stored copy, so defaults come from the paper and its project page).

What the paper does. An object-centric world model predicts the next image of a scene after an
action on one object, and must generalise to *unseen compositions* of known atoms (shape x
color). Each entity is encoded twice: a neural slot (segmenter + encoder) and a symbol vector
(attribute labels from a vision-language model applied zero-shot to the decoded slot, each label
selecting a learnable vector). The symbols, aligned with the action and put in a canonical
order, select which learned rule (an MLP) transforms each neural slot ("neurosymbolic
attention"); next slots are decoded to the next image. Trained end to end on next-state +
autoencoder reconstruction MSE. Baselines: Aligned NPS (rule selection from neural slots) and a
GNN transition model.

How the code maps to it.
- :mod:`.environment`: :class:`BlockPushingEnv` (weights, pushing, walls; EC / RC-Team /
  RC-Sticky splits with held-out combinations).
- :mod:`.perception`: the :class:`EntitySegmenter` and :class:`AttributeLabeler` protocols, the
  :class:`ConnectedComponentSegmenter` and :class:`FrozenAttributeLabeler` stand-ins.
- :mod:`.autoencoder`: :class:`SlotAutoencoder` (:class:`EntityEncoder`,
  :class:`SpatialBroadcastDecoder`).
- :mod:`.transitions`: :class:`SymbolEmbedding` (label relaxation), :class:`NeurosymbolicTransition`
  (Cosmos), :class:`AlignedNPS`, :class:`GNNTransition`, :func:`hard_select` (Gumbel rule choice).
- :mod:`.world_model`: :class:`WorldModel` (segment, encode, label, order, transition, decode;
  ``forward(image, action) -> next_image``, ``loss(batch)``).
- :mod:`.training`: warm start, end-to-end fit (both refuse held-out data), evaluation.
- :mod:`.experiment`: one replicate of the three-model comparison, with two untrained references
  (copy-the-frame, and an in-distribution test set for each model's generalisation gap);
  ``claims.py``: ``relational_composition`` (RC-Team) and ``entity_composition`` (EC).

Out of reach here, and what stands in. SAM (segmenter) and CLIP (zero-shot labeler) are not
available offline and import torchvision: the segmenter is connected components of the rendered
image, the labeler a small CNN trained on separate single-object renders and then frozen (the
stand-in for a foundation model's prior knowledge; it sees no scene, so no combination). A small
CNN replaces the finetuned ResNet, a cell-lattice spatial-broadcast decoder the full-resolution
one, and 20x20 renders (4-pixel cells) the paper's larger images; the datasets are a few thousand
transitions instead of the paper's. Rule selection is per entity in one parallel step (NPS and
Cosmos select one slot per step and repeat); see :mod:`.transitions`.

What this test bed may not be able to show (issue 38). Colors here are four pure RGB primaries,
linearly readable from a neural slot, and Aligned NPS selects its rule from the same slots with
the same actor-slot context as Cosmos; "same color as the actor" then needs no symbols, and the
held-out shape pairs need not be hard for the baseline (one small seed before issue 38: Cosmos
0.00276 vs Aligned NPS 0.00230). ``relational_composition`` therefore measures the baseline's
generalisation gap (held-out vs seen compositions) and calls the test bed unable to tell when it
is too small for symbols to matter; a relation that needs them (attributes not readable from
pixels, colors never seen in a team) is not built here.

Usage::

    from iclr24.papers.cosmos import BlockPushingEnv, WorldModel, NeurosymbolicTransition, ...
    env = BlockPushingEnv(composition="team", seed=0)
    train, test = env.splits(3000, 500)
    model = WorldModel(SlotAutoencoder(EntityEncoder(), SpatialBroadcastDecoder()),
                       NeurosymbolicTransition(), labeler)
    next_image = model(test.images[:8], test.actions[:8])          # (8, 3, 20, 20)
"""

from .autoencoder import EntityEncoder, SlotAutoencoder, SpatialBroadcastDecoder
from .environment import (
    COLORS,
    DIRECTIONS,
    SHAPE_WEIGHTS,
    SHAPES,
    BlockPushingEnv,
    Scene,
    Transitions,
)
from .experiment import (
    MODELS,
    ComparisonConfig,
    copy_frame_metrics,
    run_comparison,
    team_subset,
)
from .perception import (
    AttributeClassifier,
    AttributeLabeler,
    ConnectedComponentSegmenter,
    EntitySegmenter,
    FrozenAttributeLabeler,
    as_float_images,
    fit_attribute_classifier,
    train_attribute_labeler,
)
from .training import evaluate_world_model, fit_world_model, read_cells, warm_start_autoencoder
from .transitions import (
    AlignedNPS,
    GNNTransition,
    NeurosymbolicTransition,
    SymbolEmbedding,
    hard_select,
)
from .world_model import EntityBatch, WorldModel

__all__ = [
    "COLORS", "DIRECTIONS", "MODELS", "SHAPES", "SHAPE_WEIGHTS",
    "AlignedNPS", "AttributeClassifier", "AttributeLabeler", "BlockPushingEnv",
    "ComparisonConfig", "ConnectedComponentSegmenter", "EntityBatch", "EntityEncoder",
    "EntitySegmenter", "FrozenAttributeLabeler", "GNNTransition", "NeurosymbolicTransition",
    "Scene", "SlotAutoencoder", "SpatialBroadcastDecoder", "SymbolEmbedding", "Transitions",
    "WorldModel", "as_float_images", "copy_frame_metrics", "evaluate_world_model",
    "fit_attribute_classifier", "fit_world_model", "hard_select", "read_cells",
    "run_comparison", "team_subset", "train_attribute_labeler", "warm_start_autoencoder",
]

"""The Devil is in the Object Boundary: annotation-free instance segmentation with foundation
models (Zip; ICLR 2024, arXiv 2309.14494; official demo: ChengShiest/Zip-Your-CLIP).

Zip segments instances without instance annotations: CLIP (with CLIP Surgery) first says which
classes are present and where (activation maps); the features of one intermediate CLIP layer
are clustered with k-means (k = 20, evenly spaced grid initialisation), and the clusters inside
the activated region are kept as instance fragments unless they are boundary-shaped (bbox area /
area >= 3) or mostly outside the activation (<= 30 % activated); the connected components of the
kept fragments give boxes that prompt SAM for masks ("classification first, then discovery").

How the code maps to the paper:

- :mod:`.protocols`: the swappable pretrained parts (``SemanticActivator`` = CLIP Surgery,
  ``DenseFeatureExtractor`` = a ConvNeXt CLIP stage, ``PromptableSegmenter`` = SAM) and
  ``Instance``;
- :mod:`.discovery`: ``kmeans_grid_init`` (the boundary prior) and ``discover_instances`` (the
  fragment rules: 0.7 x mean activation threshold, 4-connectivity, activated fraction > 0.3,
  box fill < 3, min area);
- :mod:`.pipeline`: ``Zip`` / ``ZipConfig`` (``Zip.predict(image, class_names)``);
- :mod:`.baselines`: the CAM-threshold baseline (Zip without discovery) and a discovery-first
  superpixel baseline (the analogue of SAM-everything + CLIP classification);
- :mod:`.standins`: what the claims plug in, a multi-label CNN with CAM trained here on image-level
  labels and frozen (for CLIP) and box-prompted GrabCut (for SAM);
- :mod:`.scenes`: procedural 64x64 scenes of touching oranges, leaves and bricks (for COCO);
- :mod:`.coco_ap`: COCO-protocol mask AP / AP50 (checked against hand-computed cases and, in
  the tests, against pycocotools' ``COCOeval``, the reference);
- :mod:`.coco_json`: COCO-json input/output (instances and results files, RLE masks), so
  predictions can be scored by the official tools and COCO annotations read back.

Out of reach here: CLIP, CLIP Surgery and SAM weights (no downloads; ``open_clip`` and
``segment-anything`` need torchvision, which does not load on this CPU torch), COCO/LVIS, the
paper's SAM-mask scoring (not released) and the self-training of a detector on Zip's pseudo
labels. The mechanism is kept; the scale, the data and the models are stand-ins.
"""

from .baselines import CAMComponents, SuperpixelDiscovery
from .coco_ap import Detections, GroundTruth, coco_mask_ap, mask_iou
from .coco_json import (
    load_coco_ground_truth,
    load_coco_results,
    mask_to_rle,
    rle_to_mask,
    write_coco_ground_truth,
    write_coco_results,
)
from .discovery import (
    activated_region,
    check_fragment_rules,
    discover_instances,
    kmeans_grid_init,
    nearest_resize,
)
from .pipeline import Zip, ZipConfig, grid_boxes, prompt_and_score
from .protocols import DenseFeatureExtractor, Instance, PromptableSegmenter, SemanticActivator
from .scenes import CLASS_NAMES, SceneSet, make_scenes, touching_pairs
from .standins import (
    CNNActivator,
    CNNFeatureExtractor,
    CNNTraining,
    GrabCutSegmenter,
    MultiLabelCNN,
    RGBFeatures,
    train_multilabel_cnn,
    trained_cnn,
    untrained_cnn,
)

__all__ = [
    "CLASS_NAMES",
    "CAMComponents",
    "CNNActivator",
    "CNNFeatureExtractor",
    "CNNTraining",
    "DenseFeatureExtractor",
    "Detections",
    "GrabCutSegmenter",
    "GroundTruth",
    "Instance",
    "MultiLabelCNN",
    "PromptableSegmenter",
    "RGBFeatures",
    "SceneSet",
    "SemanticActivator",
    "SuperpixelDiscovery",
    "Zip",
    "ZipConfig",
    "activated_region",
    "check_fragment_rules",
    "coco_mask_ap",
    "discover_instances",
    "grid_boxes",
    "kmeans_grid_init",
    "load_coco_ground_truth",
    "load_coco_results",
    "make_scenes",
    "mask_iou",
    "mask_to_rle",
    "nearest_resize",
    "prompt_and_score",
    "rle_to_mask",
    "touching_pairs",
    "train_multilabel_cnn",
    "trained_cnn",
    "untrained_cnn",
    "write_coco_ground_truth",
    "write_coco_results",
]

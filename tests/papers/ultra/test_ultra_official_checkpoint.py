"""Loading the official released weights (DeepGraphLearning/ULTRA ``ckpts/*.pth``).

The official file is ``torch.save({"model": state_dict, "optimizer": optimizer_state})`` of the
official ``Ultra`` (d = 64, 6 + 6 layers); the test writes a file of that layout and key names
(not the released weights: they are not shipped) and checks what a wrong or partial file says.
Set ``ICLR24_ULTRA_CKPT`` to a local copy of ``ultra_3g.pth`` to also load the real file.
"""

from __future__ import annotations

import os

import pytest
import torch

from iclr24.papers.ultra import KnowledgeGraph, Ultra, UltraLinkPredictor, prepare_graph

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# The official key layout (per layer l of 6): relation_model.layers.l.{layer_norm.weight,
# layer_norm.bias, linear.weight (64, 128), linear.bias, relation.weight (4, 64)} and
# entity_model.layers.l.{layer_norm.*, linear.*, relation_projection.{0,2}.{weight, bias}},
# then entity_model.mlp.{0,2}.{weight, bias}: 82 tensors.
_OFFICIAL_SHAPES = {
    "relation_model.layers.0.relation.weight": (4, 64),
    "relation_model.layers.5.linear.weight": (64, 128),
    "relation_model.layers.3.layer_norm.bias": (64,),
    "entity_model.layers.0.relation_projection.0.weight": (64, 64),
    "entity_model.layers.5.relation_projection.2.bias": (64,),
    "entity_model.layers.2.linear.bias": (64,),
    "entity_model.mlp.0.weight": (128, 128),
    "entity_model.mlp.2.weight": (1, 128),
    "entity_model.mlp.2.bias": (1,),
}


def _official_file(path, state):
    torch.save({"model": state, "optimizer": {"state": {}, "param_groups": [{"lr": 5e-4}]}},
               path)
    return path


def _official_state(seed: int = 3) -> dict[str, torch.Tensor]:
    torch.manual_seed(seed)
    return {k: v.clone() for k, v in Ultra(64, 6).state_dict().items()}


def _tiny_kg() -> KnowledgeGraph:
    train = torch.tensor([[0, 0, 1], [1, 0, 2], [2, 1, 3], [3, 1, 0], [1, 2, 3]])
    return KnowledgeGraph(("a", "b", "c", "d"), ("r", "q", "s"), train)


def test_official_layout_loads_every_key_and_scores_like_the_source(tmp_path):
    state = _official_state()
    assert len(state) == 82
    for key, shape in _OFFICIAL_SHAPES.items():
        assert tuple(state[key].shape) == shape, key
    path = _official_file(tmp_path / "ultra_3g.pth", state)
    model = Ultra.from_official(path)
    assert not model.training and model.config() == {"dim": 64, "num_layers": 6,
                                                      "num_entity_layers": 6}
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key
    data = prepare_graph(_tiny_kg())
    torch.manual_seed(99)  # a different init: equal scores can only come from the file
    source = Ultra(64, 6)
    source.load_state_dict(state)
    source.eval()
    heads, rels = torch.tensor([0, 2]), torch.tensor([0, 4])
    with torch.no_grad():
        assert torch.allclose(model.score_all_tails(data, heads, rels),
                              source.score_all_tails(data, heads, rels))
    # a bare state dict loads too; the predictor wraps the same weights
    torch.save(state, tmp_path / "bare.pth")
    assert torch.equal(Ultra.from_official(tmp_path / "bare.pth").entity_model.mlp[0].weight,
                       state["entity_model.mlp.0.weight"])
    predictor = UltraLinkPredictor.from_official(path)
    assert torch.equal(predictor.model.relation_model.layers[0].relation.weight,
                       state["relation_model.layers.0.relation.weight"])


def test_partial_or_wrong_official_files_name_the_problem(tmp_path):
    state = _official_state()
    partial = dict(state)
    del partial["entity_model.mlp.2.bias"]
    with pytest.raises(ValueError, match=r"missing keys \['entity_model.mlp.2.bias'\]"):
        Ultra.from_official(_official_file(tmp_path / "partial.pth", partial))
    extra = {**state, "entity_model.query.weight": torch.zeros(3)}
    with pytest.raises(ValueError, match=r"unexpected keys \['entity_model.query.weight'\]"):
        Ultra.from_official(_official_file(tmp_path / "extra.pth", extra))
    # an old-style key name instead of the current one: both are named
    renamed = dict(state)
    renamed["relation_model.layers.0.relation_table"] = renamed.pop(
        "relation_model.layers.0.relation.weight")
    with pytest.raises(ValueError, match="missing keys.*relation.weight.*unexpected keys"):
        Ultra.from_official(_official_file(tmp_path / "renamed.pth", renamed))
    wrong = {**state, "relation_model.layers.0.relation.weight": torch.zeros(5, 64)}
    with pytest.raises(ValueError, match=r"wrong shapes.*relation.weight: file \(5, 64\), "
                                         r"model \(4, 64\)"):
        Ultra.from_official(_official_file(tmp_path / "wrong.pth", wrong))
    # the right file, the wrong architecture asked for
    with pytest.raises(ValueError, match="unexpected keys.*layers.5"):
        Ultra.from_official(_official_file(tmp_path / "ok.pth", state), num_layers=4)
    torch.save([1, 2, 3], tmp_path / "list.pth")
    with pytest.raises(ValueError, match="neither the official"):
        Ultra.from_official(tmp_path / "list.pth")
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable torch checkpoint"):
        Ultra.from_official(tmp_path / "junk.pth")
    with pytest.raises(FileNotFoundError, match="official checkpoint not found"):
        Ultra.from_official(tmp_path / "absent.pth")


@pytest.mark.skipif(not os.environ.get("ICLR24_ULTRA_CKPT"),
                    reason="set ICLR24_ULTRA_CKPT to a local ultra_3g.pth / ultra_4g.pth")
def test_released_checkpoint_loads():
    model = Ultra.from_official(os.environ["ICLR24_ULTRA_CKPT"])
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in Ultra(64, 6).parameters())

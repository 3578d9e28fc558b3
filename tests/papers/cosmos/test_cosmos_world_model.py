"""World model: segmentation/alignment, canonical-order invariance, the frozen labeler, the
training guards against held-out data, reading predictions back, the copy-the-frame reference,
and image dtypes (uint8 pixels are scaled, never read as floats in [0, 255])."""

import numpy as np
import pytest
import torch

from iclr24.papers.cosmos import (
    COLORS,
    SHAPES,
    AlignedNPS,
    AttributeClassifier,
    BlockPushingEnv,
    ConnectedComponentSegmenter,
    EntityEncoder,
    GNNTransition,
    NeurosymbolicTransition,
    SlotAutoencoder,
    SpatialBroadcastDecoder,
    WorldModel,
    as_float_images,
    copy_frame_metrics,
    evaluate_world_model,
    fit_attribute_classifier,
    fit_world_model,
    read_cells,
    team_subset,
    train_attribute_labeler,
    warm_start_autoencoder,
)


@pytest.fixture(scope="module")
def env():
    return BlockPushingEnv(composition="team", seed=0)


@pytest.fixture(scope="module")
def labeler(env):
    from iclr24.kits.threads import torch_threads

    images, labels = env.single_object_renders()
    with torch.random.fork_rng(), torch_threads(1):
        return train_attribute_labeler(images, labels, {"shape": SHAPES, "color": COLORS},
                                       seed=0)


@pytest.fixture(scope="module")
def data(env):
    return env.splits(64, 16, seed=0)


def _model(transition, labeler, seed=0, segmenter=None):
    torch.manual_seed(seed)
    ae = SlotAutoencoder(EntityEncoder(), SpatialBroadcastDecoder())
    return WorldModel(ae, transition, labeler, segmenter=segmenter)


def test_labeler_stand_in_labels_single_object_renders(env, labeler):
    images, labels = env.single_object_renders()
    x = torch.from_numpy(images)
    assert (labeler.label(x, "shape").numpy() == labels[:, 0]).mean() == 1.0
    assert (labeler.label(x, "color").numpy() == labels[:, 1]).mean() == 1.0
    with pytest.raises(ValueError, match="attribute must be one of"):
        labeler.label(x, "size")


def test_labeler_gets_no_gradient_and_symbols_do(one_torch_thread, labeler, data):
    model = _model(NeurosymbolicTransition(), labeler)
    for p in model.transition.parameters():
        p.data.normal_(0, 0.2)
    train, _ = data
    batch = model.prepare(train.images[:8], train.actions[:8], train.next_images[:8])
    before = [p.clone() for p in labeler.classifier.parameters()]
    loss, _ = model.loss(batch, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert all(p.grad is None and not p.requires_grad for p in labeler.classifier.parameters())
    assert all(not m.training for m in labeler.classifier.modules())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.symbols.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, labeler.classifier.parameters()))
    # and the labeler is not among the parameters the world model trains
    assert not {id(p) for p in labeler.classifier.parameters()} & {
        id(p) for p in model.parameters()}


class _ReversedSegmenter(ConnectedComponentSegmenter):
    def segment(self, image):
        return super().segment(image).flip(0)


@pytest.mark.parametrize("make", [NeurosymbolicTransition, AlignedNPS, GNNTransition],
                         ids=["cosmos", "aligned_nps", "gnn"])
def test_reordering_entities_and_action_leaves_prediction_unchanged(one_torch_thread, make,
                                                                    labeler, data):
    train, _ = data
    a = _model(make(), labeler, seed=4).eval()
    b = _model(make(), labeler, seed=4, segmenter=_ReversedSegmenter()).eval()
    for pa, pb in zip(a.transition.parameters(), b.transition.parameters()):
        pa.data.normal_(0, 0.3, generator=torch.Generator().manual_seed(pa.numel()))
        pb.data.copy_(pa.data)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        ya = a(train.images[:16], train.actions[:16])
        yb = b(train.images[:16], train.actions[:16])
        ea = a.prepare(train.images[:16], train.actions[:16])
        eb = b.prepare(train.images[:16], train.actions[:16])
    assert torch.equal(ea.entities.flip(1), eb.entities)  # really reordered
    assert torch.equal(ea.action.flip(1), eb.action)
    assert torch.allclose(ya, yb, atol=1e-5)
    assert ya.shape == (16, 3, 20, 20)


def test_action_alignment_and_errors(labeler, data, env):
    train, _ = data
    model = _model(GNNTransition(), None)
    batch = model.prepare(train.images[:10], train.actions[:10])
    for i in range(10):
        row = int(batch.action[i].abs().sum(-1).argmax())
        cell = int(train.actions[i, 0])
        r, c = divmod(cell, env.grid)
        assert batch.entities[i, row, :, r * 4:(r + 1) * 4, c * 4:(c + 1) * 4].sum() > 0
        assert int(batch.action[i, row].argmax()) == int(train.actions[i, 1])
    empty = next(k for k in range(25) if not (train.cells[0] == divmod(k, 5)).all(-1).any())
    with pytest.raises(ValueError, match="exactly one entity"):
        model.prepare(train.images[:1], np.array([[empty, 0]]))
    with pytest.raises(ValueError, match="actions must be"):
        model.prepare(train.images[:2], train.actions[:1])
    with pytest.raises(ValueError, match="directions"):
        model.prepare(train.images[:1], np.array([[int(train.actions[0, 0]), 7]]))
    with pytest.raises(TypeError, match="AttributeLabeler"):
        _model(NeurosymbolicTransition(), None)


def test_training_refuses_heldout_combinations(one_torch_thread, data, labeler):
    train, test = data
    model = _model(AlignedNPS(), None)
    test_b = model.prepare(test.images, test.actions, test.next_images, test.heldout)
    with pytest.raises(ValueError, match="held-out combinations"):
        warm_start_autoencoder(model.autoencoder, test_b, steps=1)
    with pytest.raises(ValueError, match="held-out combinations"):
        fit_world_model(model, test_b, steps=1)
    train_b = model.prepare(train.images, train.actions, train.next_images, train.heldout)
    curve = fit_world_model(model, train_b, steps=3, batch_size=4)
    assert len(curve) == 3 and all(np.isfinite(curve))


def test_read_cells_and_evaluation_on_known_answers(env, data):
    _, test = data
    protos = env.cell_prototypes()
    got = read_cells(test.next_images, protos, env.grid)
    n = len(test)
    want = 1 + test.atoms[..., 0] * 4 + test.atoms[..., 1]
    rows = np.arange(n)[:, None]
    assert (got[rows, test.next_cells[..., 0], test.next_cells[..., 1]] == want).all()
    assert (got > 0).sum() == 3 * n  # everything else reads as empty

    class Oracle(torch.nn.Module):  # predicts the true next image
        def eval(self):
            return self

        def predict(self, entities, action):
            idx = [int(np.flatnonzero((test.images == e.sum(0).numpy()).all((1, 2, 3)))[0])
                   for e in entities]
            return {"next_image": torch.from_numpy(test.next_images[idx])}

    model = _model(GNNTransition(), None)
    batch = model.prepare(test.images, test.actions, test.next_images)
    ev = evaluate_world_model(Oracle(), batch, test.atoms, test.next_cells, protos)
    assert ev["mse"] == 0.0 and ev["position_accuracy"] == 1.0 and ev["scene_accuracy"] == 1.0


def test_copy_frame_metrics_known_answers(env, data):
    """Copying the frame gets exactly the objects that did not move right."""
    _, test = data
    c = copy_frame_metrics(test, env.cell_prototypes(), env.grid)
    assert c["mse"] == pytest.approx(float(((test.images - test.next_images) ** 2).mean()))
    assert c["mse_per_transition"].shape == (len(test),)
    stayed = (test.cells == test.next_cells).all(-1)                    # (N, K)
    assert 0 < stayed.mean() < 1
    assert c["position_accuracy"] == pytest.approx(stayed.mean())
    assert c["scene_accuracy"] == pytest.approx(stayed.all(1).mean())


def test_team_subset_marks_actors_with_a_same_colored_partner(env):
    train = env.transitions(60, "train", seed=3)
    got = team_subset(train, env.grid)
    want = []
    for i in range(len(train)):
        cell = divmod(int(train.actions[i, 0]), env.grid)
        actor = [k for k in range(3) if tuple(train.cells[i, k]) == cell]
        assert len(actor) == 1
        color = train.atoms[i, actor[0], 1]
        want.append(sum(int(train.atoms[i, k, 1] == color) for k in range(3)) > 1)
    assert got.tolist() == want and 0 < got.mean() < 1


def test_uint8_images_are_scaled_and_bad_images_refused(env, data, labeler):
    train, _ = data
    model = _model(GNNTransition(), None)
    x, nxt, act = train.images[:4], train.next_images[:4], train.actions[:4]
    u8, nxt_u8 = (x * 255).round().astype(np.uint8), (nxt * 255).round().astype(np.uint8)
    a, b = model.prepare(x, act, nxt), model.prepare(u8, act, nxt_u8)
    assert torch.equal(a.entities, b.entities) and torch.equal(a.next_image, b.next_image)
    seg = ConnectedComponentSegmenter()
    assert torch.equal(seg.segment(torch.from_numpy(u8[0])), seg.segment(torch.from_numpy(x[0])))
    singles, _ = env.single_object_renders()
    single_u8 = torch.from_numpy((singles * 255).round().astype(np.uint8))
    for attribute in ("shape", "color"):
        assert torch.equal(labeler.label(single_u8, attribute),
                           labeler.label(torch.from_numpy(singles), attribute))
    protos = env.cell_prototypes()
    assert np.array_equal(read_cells(u8, protos, env.grid), read_cells(x, protos, env.grid))
    assert as_float_images(np.array([0, 255], np.uint8)).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match=r"images must be float RGB in \[0, 1\].*uint8"):
        model.prepare(x * 255, act)                              # floats in [0, 255]
    with pytest.raises(ValueError, match="next_images must be float RGB"):
        model.prepare(x, act, nxt * 255)
    with pytest.raises(TypeError, match="images must be float RGB .* got dtype torch.int32"):
        model.prepare(u8.astype(np.int32), act)
    with pytest.raises(TypeError, match="dtype torch.bool"):
        as_float_images(np.ones((1, 3, 2, 2), bool))
    with pytest.raises(ValueError, match="next_images must have the shape of images"):
        model.prepare(x, act, nxt[:3])
    with pytest.raises(ValueError, match=r"heldout must be \(B,\)"):
        model.prepare(x, act, nxt, np.zeros(3, bool))


def test_labeler_training_reads_uint8_renders_as_pixels(one_torch_thread, env):
    images, labels = env.single_object_renders()
    u8 = (images * 255).round().astype(np.uint8)
    fitted = []
    for x in (images, u8):
        torch.manual_seed(0)
        model = AttributeClassifier({"shape": 4, "color": 4}, env.image_size)
        fit_attribute_classifier(model, x, labels, seed=0, steps=3, batch_size=8)
        fitted.append(model.state_dict())
    assert all(torch.equal(fitted[0][k], fitted[1][k]) for k in fitted[0])
    with pytest.raises(ValueError, match=r"must be float RGB in \[0, 1\]"):
        fit_attribute_classifier(model, images * 255, labels, steps=1)

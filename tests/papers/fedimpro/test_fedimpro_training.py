import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.functional import cross_entropy

from iclr24.kits.federated import (
    ClientUpdate,
    FitConfig,
    digits_split,
    dirichlet_label_partition,
    flatten_params,
    load_flat_params,
    local_sgd,
)
from iclr24.papers.fedimpro import (
    ClassGaussianBank,
    ExactStatisticsServer,
    FedImproClient,
    FedImproConfig,
    FedImproServer,
    SplitNet,
    digits_mlp,
    exact_class_gaussians,
    fedimpro_local_train,
    fedimpro_loss,
    gradient_dissimilarity,
    gradient_drift,
    head_gradient,
    simulate,
    split_sequential,
    synthetic_weight,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_split_net_equals_the_sequential_model():
    model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3))
    net = split_sequential(model, 2)
    x = torch.randn(5, 8)
    assert torch.allclose(net(x), model(x))
    assert net.features(x).shape == (5, 6)
    with pytest.raises(ValueError, match="cut"):
        split_sequential(model, 3)
    with pytest.raises(TypeError):
        split_sequential(nn.Linear(2, 2), 1)


def test_split_net_reshapes_flat_features_for_conv_heads():
    low = nn.Conv2d(1, 2, 3, padding=1)
    high = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    net = SplitNet(low, high)
    x = torch.randn(2, 1, 4, 4)
    z = net.features(x)
    assert z.shape == (2, 32)
    assert torch.allclose(net.head(z), high(low(x)))


def test_weight_schedules():
    assert synthetic_weight(50, "gradual2half", 100) == (1.0, 0.5)
    assert synthetic_weight(50, "gradualhalfhalf", 100) == (0.75, 0.25)
    assert synthetic_weight(99, "milestone", 100) == (1.0, 0.0)
    assert synthetic_weight(100, "milestone", 100) == (0.0, 1.0)
    assert synthetic_weight(3, "default", 10) is None
    with pytest.raises(ValueError, match="weight_schedule"):
        synthetic_weight(1, "cosine", 10)
    a, b = torch.randn(4, 3), torch.randn(5, 3)
    ya, yb = torch.tensor([0, 1, 2, 0]), torch.tensor([1, 1, 2, 0, 0])
    assert torch.allclose(fedimpro_loss(a, ya, b, yb, None),
                          cross_entropy(torch.cat([a, b]), torch.cat([ya, yb])))
    assert torch.allclose(fedimpro_loss(a, ya, b, yb, (1.0, 0.0)), cross_entropy(a, ya))


def test_synthetic_rows_do_not_move_the_low_level_part():
    """One full-batch step: L's update equals plain SGD's (gradients reach L only through real
    features); H's update differs once the synthetic weight is positive."""
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    p0 = flatten_params(net)
    bank = ClassGaussianBank(3, 6, sigma_max=0.1, ema="official")
    res = fedimpro_local_train(net, p0, bank, x, y, round_idx=5, lr=0.1, batch_size=64,
                               generator=torch.Generator().manual_seed(0), max_rounds=10)
    plain, _ = local_sgd(net, p0, x, y, lr=0.1, batch_size=64,
                         generator=torch.Generator().manual_seed(0), epochs=1)
    n_low = sum(p.numel() for p in net.low.parameters())
    assert torch.allclose(res.delta[:n_low], plain[:n_low], atol=1e-6)
    assert not torch.allclose(res.delta[n_low:], plain[n_low:], atol=1e-6)
    assert res.class_counts.tolist() == np.bincount(y.numpy(), minlength=3).tolist()
    assert res.bank_state["mean"].shape == (3, 6)


def test_client_and_server_round_trip():
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    clients = [FedImproClient(net, x[:32], y[:32], num_classes=3, nominal_count=20.0),
               FedImproClient(net, x[32:], y[32:], num_classes=3, nominal_count=20.0)]
    server = FedImproServer(3, 6, seed=0)
    p0 = flatten_params(net)
    ups = []
    for k, c in enumerate(clients):
        u = c.fit(p0, FitConfig(1, k, server.client_config(1)))
        u.extras["client_id"] = k
        ups.append(u)
    new = server.aggregate(p0, ups, 1)
    assert new.shape == p0.shape
    assert set(server.counts) == {0, 1}
    # client 1 absent next round: contributes the previous global bank with its counts
    prev = {k: v.clone() for k, v in server.bank.items()}
    u = clients[0].fit(new, FitConfig(2, 0, server.client_config(2)))
    u.extras["client_id"] = 0
    server.aggregate(new, [u], 2)
    c0, c1 = server.counts[0], server.counts[1]
    pi0 = c0 / np.maximum(c0 + c1, 1)
    expect = pi0[:, None] * u.extras["bank"]["mean"].double().numpy() + \
        (1 - pi0)[:, None] * prev["mean"].double().numpy()
    assert np.allclose(server.bank["mean"].numpy(), expect, atol=1e-5)
    with pytest.raises(ValueError, match="bank"):
        clients[0].fit(p0, FitConfig(1, 0, {}))
    with pytest.raises(ValueError, match="extras"):
        server.aggregate(p0, [ClientUpdate(torch.zeros_like(p0), 1)], 3)


def test_gradient_dissimilarity_closed_form():
    g = torch.tensor([[1.0, 0.0], [3.0, 0.0]])
    assert gradient_dissimilarity(g) == pytest.approx(1.0 / 4.0)  # mean ||g-2||^2=1, ||g||^2=4
    assert gradient_dissimilarity(torch.ones(3, 5)) == 0.0
    with pytest.raises(ValueError):
        gradient_dissimilarity(torch.ones(1, 5))
    with pytest.raises(ValueError, match="zero"):
        gradient_dissimilarity(torch.tensor([[1.0], [-1.0]]))


def test_head_gradient_matches_autograd_on_the_whole_model():
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    p = flatten_params(net)
    g = head_gradient(net, p, x, y)
    net.zero_grad()
    cross_entropy(net(x), y).backward()
    ref = torch.cat([q.grad.reshape(-1) for q in net.high.parameters()])
    assert torch.allclose(g, ref, atol=1e-6)
    bank = ClassGaussianBank(3, 6, ema="official")
    g0 = head_gradient(net, p, x, y, bank=bank, weights=(1.0, 0.0))
    assert torch.allclose(g0, ref, atol=1e-6)


def test_simulation_is_deterministic_and_partitions_are_shared():
    data = digits_split(seed=0)
    parts = dirichlet_label_partition(data.y_train.numpy(), 4, 0.5, min_partition_size=5,
                                      seed=0)
    a = simulate("fedimpro", data, parts, 2, seed=0)
    b = simulate("fedimpro", data, parts, 2, seed=0)
    assert a.records == b.records
    assert torch.equal(a.final_params, b.final_params)
    c = simulate("fedavg", data, parts, 2, seed=0)
    assert c.records[0] == a.records[0]  # same initial model
    with pytest.raises(ValueError, match="algorithm"):
        simulate("scaffold", data, parts, 1)


def test_gradient_drift_closed_form_and_validation():
    g = torch.tensor([[1.0, 0.0], [3.0, 0.0]])
    assert gradient_drift(g) == pytest.approx(1.0)  # g_bar = (2, 0): mean ||g_k - g_bar||^2
    assert gradient_dissimilarity(g) == pytest.approx(gradient_drift(g) / 4.0)
    # scaling every gradient by 1/2 quarters the drift but leaves the normalised ratio alone
    assert gradient_drift(g / 2) == pytest.approx(0.25)
    assert gradient_dissimilarity(g / 2) == pytest.approx(gradient_dissimilarity(g))
    # the drift of a mean-zero pair is defined where the normalised ratio is not
    assert gradient_drift(torch.tensor([[1.0], [-1.0]])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="K >= 2"):
        gradient_drift(torch.ones(1, 3))
    with pytest.raises(ValueError, match="NaN or inf"):
        gradient_drift(torch.tensor([[1.0, float("nan")], [0.0, 0.0]]))


def _updates(server, clients, params, round_idx):
    ups = []
    for k, c in enumerate(clients):
        u = c.fit(params, FitConfig(round_idx, k, server.client_config(round_idx)))
        u.extras["client_id"] = k
        ups.append(u)
    return ups


def test_server_without_sharing_never_updates_its_bank():
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    clients = [FedImproClient(net, x[:32], y[:32], num_classes=3, nominal_count=20.0),
               FedImproClient(net, x[32:], y[32:], num_classes=3, nominal_count=20.0)]
    shared = FedImproServer(3, 6, seed=0)
    alone = FedImproServer(3, 6, seed=0, share_statistics=False)
    init = {k: v.clone() for k, v in alone.bank.items()}
    p0 = flatten_params(net)
    new_shared = shared.aggregate(p0, _updates(shared, clients, p0, 1), 1)
    new_alone = alone.aggregate(p0, _updates(alone, clients, p0, 1), 1)
    assert torch.allclose(new_shared, new_alone)  # the model update is FedAvg's in both
    assert torch.equal(alone.bank["mean"], init["mean"])
    assert torch.equal(alone.bank["std"], init["std"])
    assert set(alone.counts) == {0, 1}
    assert not torch.allclose(shared.bank["mean"], init["mean"])
    with pytest.raises(TypeError, match="share_statistics"):
        FedImproServer(3, 6, share_statistics="no")


def test_exact_statistics_are_the_pooled_class_moments():
    """With no cap on sigma, aggregating every client's exact moments by the law of total
    variance gives the class moments of all clients' features pooled (known answer)."""
    x, y = _data(n=90, seed=1)
    net = digits_mlp(8, 6, 3)
    p = flatten_params(net) + 0.1
    data = [(x[:20], y[:20]), (x[20:50], y[20:50]), (x[50:], y[50:])]
    out = exact_class_gaussians(net, p, data, 3, sigma_max=1e9)
    load_flat_params(net, p)
    with torch.no_grad():
        z = net.features(x)
    for c in range(3):
        assert torch.allclose(out["mean"][c], z[y == c].mean(0), atol=1e-5)
        assert torch.allclose(out["std"][c], z[y == c].std(0, unbiased=False), atol=1e-5)
    capped = exact_class_gaussians(net, p, data, 3, sigma_max=0.01)
    assert torch.allclose(capped["mean"], out["mean"], atol=1e-6)
    assert (capped["std"] <= out["std"] + 1e-6).all()  # the cap applies to each client's sigma
    one = exact_class_gaussians(net, p, [(x, y)], 3, sigma_max=0.01)  # no between-client term
    assert one["std"].max() <= 0.01 + 1e-6
    with pytest.raises(ValueError, match="client_data"):
        exact_class_gaussians(net, p, [], 3, sigma_max=0.1)
    with pytest.raises(ValueError, match="sigma_max"):
        exact_class_gaussians(net, p, data, 3, sigma_max=0.0)


def test_exact_statistics_server_sets_the_bank_from_all_clients():
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    data = [(x[:32], y[:32]), (x[32:], y[32:])]
    clients = [FedImproClient(net, a, b, num_classes=3, nominal_count=20.0) for a, b in data]
    server = ExactStatisticsServer(net, data, 3, sigma_max=0.1, seed=0)
    p0 = flatten_params(net)
    new = server.aggregate(p0, _updates(server, clients, p0, 1)[:1], 1)  # one client sampled
    expect = exact_class_gaussians(net, new, data, 3, 0.1)
    assert torch.allclose(server.bank["mean"], expect["mean"])
    assert torch.allclose(server.bank["std"], expect["std"])
    bad = y[:32].clone()
    bad[0] = 5
    with pytest.raises(ValueError, match=r"client_data\[0\] labels"):
        ExactStatisticsServer(net, [(x[:32], bad)], 3)
    with pytest.raises(ValueError, match=r"client_data\[0\]: x has"):
        ExactStatisticsServer(net, [(x[:32], y[:31])], 3)


def test_simulate_bank_sharing_arms():
    """'none': the clients receive the initial bank every round; 'exact': the bank after each
    round is the exact statistics at the new global model; 'clients' moves away from both."""
    data = digits_split(seed=0)
    parts = dirichlet_label_partition(data.y_train.numpy(), 4, 0.5, min_partition_size=5,
                                      seed=0)
    banks: dict[str, list] = {}
    for mode in ("clients", "none", "exact"):
        seen = []
        simulate("fedimpro", data, parts, 2, seed=0,
                 config=FedImproConfig(bank_sharing=mode),
                 checkpoint_fn=lambda t, p, bank, seen=seen: seen.append((p.clone(), bank)))
        banks[mode] = seen
    init = FedImproServer(data.num_classes, 128, 0.1, seed=0).bank
    assert all(torch.equal(b["mean"], init["mean"]) for _, b in banks["none"])
    net = digits_mlp(64, 128, 10)
    cdata = [(data.x_train[torch.as_tensor(p)], data.y_train[torch.as_tensor(p)]) for p in parts]
    for params, bank in banks["exact"]:
        assert torch.allclose(bank["mean"], exact_class_gaussians(net, params, cdata, 10,
                                                                  0.1)["mean"], atol=1e-5)
    last = banks["clients"][-1][1]["mean"]
    assert not torch.allclose(last, init["mean"])
    assert not torch.allclose(last, banks["exact"][-1][1]["mean"])
    with pytest.raises(ValueError, match="bank_sharing"):
        FedImproConfig(bank_sharing="oracle")
    with pytest.raises(ValueError, match="noise_std"):
        FedImproConfig(noise_std=float("nan"))


def test_client_refuses_nan_noise_before_training():
    x, y = _data()
    net = digits_mlp(8, 6, 3)
    with pytest.raises(ValueError, match="noise_std must be a finite number"):
        FedImproClient(net, x, y, num_classes=3, nominal_count=20.0, noise_std=float("nan"))
    bank = ClassGaussianBank(3, 6, ema="official")
    with pytest.raises(ValueError, match="noise_std"):
        fedimpro_local_train(net, flatten_params(net), bank, x, y, round_idx=1, lr=0.1,
                             batch_size=16, generator=torch.Generator().manual_seed(0),
                             max_rounds=10, noise_std=-1.0)

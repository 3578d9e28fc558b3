"""Federated-learning simulation kit shared by FedImpro, CA²FL (and VertiBench's data side).

What is here
- :mod:`.partitioning`: Dirichlet label-skew (with minimum-size resampling) and IID partitions.
- :mod:`.strategies`: server math as transport-free functions on flat parameter vectors
  (``fedavg_aggregate``, ``fedbuff_step``, ``fedasync_mix``, ``fedprox_penalty``) and the
  stateful objects built on them (``FedAvg``, ``FedProx``, ``FedBuff``, ``FedAsync``), with the
  ``SyncAggregator``/``AsyncAggregator`` protocols papers implement (CA²FL, FedImpro's server).
- :mod:`.simulation`: the in-process simulator: ``run_synchronous`` (rounds) and
  ``AsyncSimulator`` (event queue on a virtual clock with per-client job-time laws), both
  deterministic in their seed.
- :mod:`.local_training`: plain/FedProx local SGD on PyTorch modules, flat-vector helpers;
  the vector is the model's federated state: parameters, then floating-point buffers
  (BatchNorm running statistics), integer buffers kept local (``federated_state``).
- :mod:`.datasets`: bundled data (sklearn digits) split the way the specs describe, with checked
  labels and features.
- :mod:`.flower` (optional ``[flower]`` extra, import it explicitly): the same strategy objects
  behind Flower's Message API: a strategy that ships and aggregates side state next to the model
  and an asynchronous server loop on Flower's low-level ``Grid`` messaging.

Usage (FedBuff on a toy problem)::

    from iclr24.kits.federated import AsyncSimulator, ConstantDelays, FedBuff
    sim = AsyncSimulator(clients, FedBuff(x0, buffer_size=3), concurrency=6,
                         delays=ConstantDelays(1.0), seed=0)
    history = sim.run(max_server_updates=100, eval_fn=lambda x: {"loss": f(x)})

Nothing here imports flwr; reproductions never start processes or Ray. The models simulated
here are tiny: run with ``torch.set_num_threads(1)`` (the claims do), since extra intra-op
threads only add contention on a small CPU.
"""

from .datasets import TensorSplit, check_labels, digits_split
from .local_training import (
    TorchClient,
    accuracy,
    federated_state,
    flatten_params,
    load_flat_params,
    local_sgd,
    minibatch_indices,
)
from .partitioning import (
    check_partitions,
    dirichlet_label_partition,
    iid_partition,
    partition_class_counts,
)
from .simulation import (
    AsyncSimulator,
    ConstantDelays,
    DelayModel,
    ExponentialDelays,
    FederatedClient,
    FitConfig,
    History,
    derive_seed,
    lognormal_client_means,
    run_synchronous,
)
from .strategies import (
    AsyncAggregator,
    ClientUpdate,
    FedAsync,
    FedAvg,
    FedBuff,
    FedProx,
    SyncAggregator,
    check_update,
    fedasync_mix,
    fedavg_aggregate,
    fedbuff_step,
    fedprox_penalty,
    polynomial_staleness,
)

__all__ = [
    "AsyncAggregator",
    "AsyncSimulator",
    "ClientUpdate",
    "ConstantDelays",
    "DelayModel",
    "ExponentialDelays",
    "FedAsync",
    "FedAvg",
    "FedBuff",
    "FedProx",
    "FederatedClient",
    "FitConfig",
    "History",
    "SyncAggregator",
    "TensorSplit",
    "TorchClient",
    "accuracy",
    "check_labels",
    "check_partitions",
    "check_update",
    "derive_seed",
    "digits_split",
    "dirichlet_label_partition",
    "fedasync_mix",
    "fedavg_aggregate",
    "fedbuff_step",
    "federated_state",
    "fedprox_penalty",
    "flatten_params",
    "iid_partition",
    "load_flat_params",
    "local_sgd",
    "lognormal_client_means",
    "minibatch_indices",
    "partition_class_counts",
    "polynomial_staleness",
    "run_synchronous",
]

"""A readable ZeRO-3 engine with ZeRO++'s qwZ, hpZ and qgZ as independent switches.

Wrap a model and an optimizer, then train as with DeepSpeed or FSDP::

    engine = ZeroPPEngine(model, torch.optim.Adam(model.parameters(), lr=1e-3), comm,
                          quantized_weights=8, hpz=True, quantized_gradients=4)
    loss = loss_fn(engine(x), y)
    engine.backward(loss)
    engine.step()

How the code maps to the paper (ZeRO++ §2-3, notation N = n nodes x G ranks, M = fp16 bytes):

* **Units and sharding (ZeRO-3).** Every leaf module that owns parameters (``nn.Linear``,
  ``nn.LayerNorm``, ...) is a *unit*. Its parameters are flattened, zero-padded to a multiple of
  N, and split in N equal slices; rank r keeps only slice r as an fp32 master ``nn.Parameter``
  (``engine.shards``). The optimizer is built over the shards, so its state is sharded too.
* **Forward.** Entering a unit, the rank all-gathers the unit's weights over all N ranks in the
  communication dtype (fp16) -- or, with **qwZ** (``quantized_weights=bits``), as block-quantized
  int8/6/4/2 codes plus fp32 scales -- runs the module with them and frees them.
* **hpZ** (``hpz=True``). At the end of the forward all-gather the rank keeps the payload bytes
  of its node-local 1/G of the unit (the secondary partition, n primary shards) until the next
  optimizer step. The backward all-gather then runs over the G ranks of the node only: no
  cross-node bytes. The secondary copy is the *received wire payload*, so with qwZ it holds the
  same int8 codes and the backward weights are bit-identical to the forward ones.
* **Backward.** The unit's weights are gathered again (hpZ: intra-node; otherwise a second
  all-N all-gather, quantized under qwZ) and its forward is recomputed to get the weight
  gradient (the engine saves the unit's inputs, not its internals, as activation checkpointing
  does). The flat gradient is averaged across ranks: ZeRO-3 uses a ring reduce-scatter in fp16;
  **qgZ** (``quantized_gradients=bits``) uses the hierarchical quantized all-to-all of
  :func:`~.collectives.hierarchical_all_to_all_reduce`. The result is the shard's ``.grad``.
* **Step.** The wrapped optimizer updates the fp32 master shards; nothing else is quantized.

With ``quantized_weights=None, hpz=False, quantized_gradients=None`` this is plain ZeRO-3, and
with ``comm_dtype=torch.float32`` it matches single-process full-batch training to float
rounding (tested to 1e-6).

What differs from DeepSpeed (and why): flattening per unit with padding to a multiple of N
means no tensor needs DeepSpeed's reduce-scatter fallback for 1-D or odd-sized tensors; there is
no prefetching or overlap of communication with compute (bytes, not speed, are what a 2-core
CPU can show); qgZ keeps a rank's own chunk in fp32 rather than quantizing it too; every rank
must call the same units in the same order (SPMD), and units must be deterministic (no dropout
inside a parameter-owning leaf module), because their forward is recomputed in backward.
Optimizers must be elementwise (SGD, Adam, AdamW...) to equal unsharded training; global-norm
clipping would need an extra all-reduce and is not provided.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from .collectives import hierarchical_all_to_all_reduce, ring_all_gather, ring_reduce_scatter
from .transport import Communicator
from .wire_format import BlockQuantCodec, CastCodec, WireCodec

__all__ = ["PHASES", "ZeroPPConfig", "ZeroPPEngine"]

#: Ledger phases the engine records under.
PHASES = ("setup", "fwd_allgather", "bwd_allgather", "grad_reduce", "state_gather")


@dataclass(frozen=True)
class ZeroPPConfig:
    """The three ZeRO++ switches and the quantizer settings (defaults: the paper's ZeRO++).

    quantized_weights:   qwZ bits for weight all-gathers (8 in the paper), None = off;
    hpz:                 secondary intra-node partition for the backward all-gather;
    quantized_gradients: qgZ bits for the gradient all-to-all (4 in the paper), None = off;
    block_size:          elements per qwZ block (scales: one fp32 per block; 2048 by default);
    comm_dtype:          dtype of unquantized communication (fp16 as in the paper);
    gradient_block_size: elements per qgZ block; None = DeepSpeed's rule, per unit
                         ``ceil(numel / max(dim0, dim1, N))`` from the unit's largest 2-D
                         parameter (a 4096x4096 weight gets 4096 groups), ``block_size`` for
                         units with only 1-D parameters (DeepSpeed sends those unquantized).
    """

    quantized_weights: int | None = 8
    hpz: bool = True
    quantized_gradients: int | None = 4
    block_size: int = 2048
    comm_dtype: torch.dtype = torch.float16
    gradient_block_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("quantized_weights", "quantized_gradients"):
            bits = getattr(self, name)
            if bits is not None and (isinstance(bits, bool) or not isinstance(bits, int)
                                     or not 2 <= bits <= 8):
                raise ValueError(f"{name} must be None or an int in 2..8, got {bits!r}")
        if not isinstance(self.hpz, bool):
            raise TypeError(f"hpz must be a bool, got {self.hpz!r}")
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) \
                or self.block_size < 1:
            raise ValueError(f"block_size must be a positive int, got {self.block_size!r}")
        gbs = self.gradient_block_size
        if gbs is not None and (isinstance(gbs, bool) or not isinstance(gbs, int) or gbs < 1):
            raise ValueError(f"gradient_block_size must be None or a positive int, got {gbs!r}")
        if self.comm_dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise ValueError(f"comm_dtype must be float16, bfloat16 or float32, got "
                             f"{self.comm_dtype!r}")

    @classmethod
    def zero3(cls, comm_dtype: torch.dtype = torch.float16) -> ZeroPPConfig:
        """Plain ZeRO-3: every switch off."""
        return cls(None, False, None, comm_dtype=comm_dtype)


@dataclass
class _Unit:
    """One parameter-owning leaf module and its sharded flat parameters."""

    name: str
    module: nn.Module
    forward: Callable[..., object]
    param_names: list[str]
    shapes: list[torch.Size]
    numel: int          # real parameters
    shard_numel: int    # S = padded / N
    shard: nn.Parameter
    grad_block_size: int = 2048  # qgZ quantization block for this unit
    secondary: torch.Tensor | None = field(default=None, repr=False)

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        out, offset = {}, 0
        for name, shape in zip(self.param_names, self.shapes):
            size = math.prod(shape)
            out[name] = flat[offset:offset + size].view(shape)
            offset += size
        return out


@contextmanager
def _materialized(module: nn.Module, params: dict[str, torch.Tensor]):
    """Temporarily give ``module`` plain-tensor attributes for its (removed) parameters."""
    for name, value in params.items():
        module.__dict__[name] = value
    try:
        yield
    finally:
        for name in params:
            module.__dict__.pop(name, None)


def _as_tuple(out: object) -> tuple[torch.Tensor, ...]:
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, tuple) and all(isinstance(o, torch.Tensor) for o in out):
        return out
    raise TypeError("a sharded unit's forward must return a tensor or a tuple of tensors, got "
                    f"{type(out).__name__}")


class _ShardedUnitCall(torch.autograd.Function):
    """Gather -> compute -> free in forward; gather -> recompute -> reduce in backward."""

    @staticmethod
    def forward(ctx, engine, unit, kwargs, shard, *args):
        full = engine._gather(unit, backward=False)
        with _materialized(unit.module, unit.views(full)):
            out = unit.forward(*args, **kwargs)
        ctx.engine, ctx.unit, ctx.kwargs = engine, unit, kwargs
        ctx.save_for_backward(*args)
        return out  # the gathered weights go out of scope here: ZeRO-3 frees them

    @staticmethod
    def backward(ctx, *grad_outputs):
        engine, unit = ctx.engine, ctx.unit
        full = engine._gather(unit, backward=True)
        params = {k: v.detach().requires_grad_(True) for k, v in unit.views(full).items()}
        inputs = [a.detach().requires_grad_(a.requires_grad) for a in ctx.saved_tensors]
        with torch.enable_grad(), _materialized(unit.module, params):
            outs = _as_tuple(unit.forward(*inputs, **ctx.kwargs))  # recompute (checkpointing)
        wrt = list(params.values()) + [x for x in inputs if x.requires_grad]
        pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad and g is not None]
        grads = torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                    allow_unused=True) if pairs else [None] * len(wrt)
        n_params = len(params)
        shard_grad = None
        if ctx.needs_input_grad[3]:
            flat = torch.zeros(unit.shard_numel * engine.world_size, device=unit.shard.device)
            offset = 0
            for g, p in zip(grads[:n_params], params.values()):
                if g is not None:
                    flat[offset:offset + p.numel()] = g.reshape(-1)
                offset += p.numel()
            shard_grad = engine._reduce_gradient(flat, unit.grad_block_size)
        input_grads, it = [], iter(grads[n_params:])
        for x in inputs:
            input_grads.append(next(it) if x.requires_grad else None)
        return (None, None, None, shard_grad, *input_grads)


class ZeroPPEngine(nn.Module):
    """ZeRO-3 data parallelism over ``comm``'s ranks with ZeRO++'s optional qwZ, hpZ and qgZ.

    model:     the same ``nn.Module`` built identically on every rank (same seed); its
               parameter-owning leaf modules are sharded in place (their parameters move into
               ``engine.shards``). A module that owns parameters *and* has children with
               parameters, or a parameter shared between modules, is rejected.
    optimizer: a ``torch.optim.Optimizer`` built on ``model.parameters()`` (rebuilt with the same
               class and hyper-parameters over the shards; one param group), or a callable
               ``list[Parameter] -> Optimizer``; None for forward/backward only (the shard
               gradients are left in ``engine.shards[i].grad``; :meth:`step` then raises).
    comm:      this rank's :class:`~.transport.Communicator` (from ``launch`` / ``init_distributed``
               / the simulator).
    quantized_weights, hpz, quantized_gradients, block_size, comm_dtype, gradient_block_size: see
               :class:`ZeroPPConfig`; or pass ``config=`` directly.

    Every rank must call forward/backward/step in lockstep (SPMD). The model output of each rank
    is computed on that rank's micro-batch; gradients are averaged over ranks, so with equal
    micro-batches and a mean loss the update equals full-batch training.
    """

    def __init__(self, model: nn.Module,
                 optimizer: torch.optim.Optimizer | Callable[[list[nn.Parameter]],
                                                             torch.optim.Optimizer] | None,
                 comm: Communicator, *, quantized_weights: int | None = 8, hpz: bool = True,
                 quantized_gradients: int | None = 4, block_size: int = 2048,
                 comm_dtype: torch.dtype = torch.float16,
                 gradient_block_size: int | None = None, config: ZeroPPConfig | None = None,
                 check_replicas: bool = True) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        if not isinstance(comm, Communicator):
            raise TypeError(f"comm must be a Communicator, got {type(comm).__name__}")
        self.config = config if config is not None else ZeroPPConfig(
            quantized_weights, hpz, quantized_gradients, block_size, comm_dtype,
            gradient_block_size)
        if not isinstance(self.config, ZeroPPConfig):
            raise TypeError(f"config must be a ZeroPPConfig, got {type(self.config).__name__}")
        self.comm = comm
        self.world_size = comm.world_size
        topo = comm.topology
        cfg = self.config
        self._weight_codec: WireCodec = (
            BlockQuantCodec(cfg.quantized_weights, cfg.block_size, cfg.comm_dtype)
            if cfg.quantized_weights is not None else CastCodec(cfg.comm_dtype))
        self._all = topo.all_ranks()
        self._intra = topo.intra_ranks(comm.rank)
        if check_replicas:
            self._check_replicas(model)
        self.module = model
        self.units: list[_Unit] = self._shard(model)
        self.shards = nn.ParameterList([u.shard for u in self.units])
        self.optimizer = self._build_optimizer(optimizer)

    # ------------------------------------------------------------------ construction
    def _check_replicas(self, model: nn.Module) -> None:
        """All ranks must start from the same weights: compare a fingerprint across ranks."""
        with torch.no_grad():
            flat = [p.detach().reshape(-1).to("cpu", torch.float64) for p in model.parameters()]
            vec = torch.cat(flat) if flat else torch.zeros(1, dtype=torch.float64)
            weights = torch.linspace(1.0, 2.0, vec.numel(), dtype=torch.float64)
            fingerprint = torch.stack([vec.sum(), (vec * weights).sum(),
                                       torch.tensor(float(vec.numel()), dtype=torch.float64)])
        codec = CastCodec(torch.float64)
        got = ring_all_gather(self.comm, codec.encode(fingerprint), self._all, "setup")
        prints = [codec.decode(pl, 3) for pl in got]
        if any(not torch.equal(prints[0], f) for f in prints[1:]):
            raise ValueError("model parameters differ across ranks; build the model with the same "
                             "seed on every rank before wrapping it")

    def _shard(self, model: nn.Module) -> list[_Unit]:
        units: list[_Unit] = []
        seen: dict[int, str] = {}
        n_ranks, rank = self.world_size, self.comm.rank
        for mod_name, module in model.named_modules():
            own = list(module._parameters.items())
            own = [(k, p) for k, p in own if p is not None]
            if not own:
                continue
            if any(any(True for _ in child.parameters()) for child in module.children()):
                raise ValueError(f"module {mod_name or '<root>'!r} owns parameters and has "
                                 "children with parameters; move its own parameters into a leaf "
                                 "module so the engine can shard it as one unit")
            for pname, p in own:
                if id(p) in seen:
                    raise ValueError(f"parameter {mod_name}.{pname} is shared with "
                                     f"{seen[id(p)]}; tied parameters are not supported")
                seen[id(p)] = f"{mod_name}.{pname}"
            trainable = {p.requires_grad for _, p in own}
            if len(trainable) > 1:
                raise ValueError(f"module {mod_name!r} mixes frozen and trainable parameters; "
                                 "freeze whole modules")
            flat = torch.cat([p.detach().reshape(-1).to(torch.float32) for _, p in own])
            shard_numel = -(-flat.numel() // n_ranks)  # S = ceil(P / N); pad to N * S
            padded = torch.zeros(shard_numel * n_ranks, device=flat.device)
            padded[:flat.numel()] = flat
            shard = nn.Parameter(padded[rank * shard_numel:(rank + 1) * shard_numel].clone(),
                                 requires_grad=trainable.pop())
            for pname, _ in own:
                del module._parameters[pname]
            unit = _Unit(mod_name, module, module.forward, [k for k, _ in own],
                         [p.shape for _, p in own], flat.numel(), shard_numel, shard,
                         self._gradient_block([p.shape for _, p in own], shard_numel))
            module.forward = self._make_forward(unit)
            units.append(unit)
        if not units:
            raise ValueError("model has no parameters to shard")
        return units

    def _gradient_block(self, shapes: list[torch.Size], shard_numel: int) -> int:
        """qgZ block size of a unit (see ``ZeroPPConfig.gradient_block_size``)."""
        cfg = self.config
        if cfg.gradient_block_size is not None:
            return cfg.gradient_block_size
        matrices = [s for s in shapes if len(s) >= 2]
        if not matrices:
            return cfg.block_size
        big = max(matrices, key=math.prod)
        groups = max(big[0], math.prod(big[1:]), self.world_size)  # DeepSpeed: max(d0, d1, N)
        return -(-shard_numel * self.world_size // groups)

    def _make_forward(self, unit: _Unit) -> Callable[..., object]:
        def sharded_forward(*args, **kwargs):
            if not all(isinstance(a, torch.Tensor) for a in args):
                raise TypeError(f"unit {unit.name!r}: positional arguments must be tensors; pass "
                                "other values as keyword arguments")
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in kwargs.values()):
                raise TypeError(f"unit {unit.name!r}: tensors that need gradients must be "
                                "positional arguments")
            return _ShardedUnitCall.apply(self, unit, kwargs, unit.shard, *args)
        return sharded_forward

    def _build_optimizer(self, optimizer) -> torch.optim.Optimizer | None:
        params = [u.shard for u in self.units if u.shard.requires_grad]
        if optimizer is None:
            return None
        if isinstance(optimizer, torch.optim.Optimizer):
            if len(optimizer.param_groups) != 1:
                raise ValueError("optimizer must have exactly one param group (got "
                                 f"{len(optimizer.param_groups)}); pass a callable instead")
            defaults = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
            return type(optimizer)(params, **defaults)
        if callable(optimizer):
            opt = optimizer(params)
            if not isinstance(opt, torch.optim.Optimizer):
                raise TypeError("optimizer callable must return a torch.optim.Optimizer, got "
                                f"{type(opt).__name__}")
            return opt
        raise TypeError("optimizer must be a torch.optim.Optimizer or a callable params -> "
                        f"Optimizer, got {type(optimizer).__name__}")

    # ------------------------------------------------------------------ communication
    def _gather(self, unit: _Unit, backward: bool) -> torch.Tensor:
        """The unit's full flat weights (N * S,) float32, as the wire delivers them."""
        codec, s = self._weight_codec, unit.shard_numel
        topo = self.comm.topology
        if backward and self.config.hpz:
            if unit.secondary is None:
                raise RuntimeError(f"unit {unit.name!r}: backward without a forward since the "
                                   "last step (hpZ secondary partition is empty)")
            # hpZ: all-gather the secondary partitions within the node only
            got = ring_all_gather(self.comm, unit.secondary, self._intra, "bwd_allgather")
            per = codec.nbytes(s)
            payloads = [pl[i * per:(i + 1) * per] for pl in got
                        for i in range(topo.num_nodes)]
        else:
            phase = "bwd_allgather" if backward else "fwd_allgather"
            payloads = ring_all_gather(self.comm, codec.encode(unit.shard.detach()), self._all,
                                       phase)
            if not backward and self.config.hpz:
                # keep my node-local 1/G: the n primary payloads of secondary slice j (hpZ)
                j, n = topo.local_rank(self.comm.rank), topo.num_nodes
                unit.secondary = torch.cat(payloads[j * n:(j + 1) * n])
        return torch.cat([codec.decode(pl, s) for pl in payloads])

    def _reduce_gradient(self, flat_grad: torch.Tensor, grad_block: int) -> torch.Tensor:
        """Average the unit's flat gradient over ranks; return this rank's (S,) shard."""
        cfg = self.config
        if cfg.quantized_gradients is not None:
            # qgZ: quantized hierarchical all-to-all (averages once, over all N ranks)
            return hierarchical_all_to_all_reduce(self.comm, flat_grad, cfg.quantized_gradients,
                                                  grad_block, "grad_reduce")
        summed = ring_reduce_scatter(self.comm, flat_grad, self._all, CastCodec(cfg.comm_dtype),
                                     "grad_reduce")
        return summed / self.world_size  # ZeRO-3: reduce-scatter, then the mean over N ranks

    # ------------------------------------------------------------------ training API
    def forward(self, *args, **kwargs):
        """Run the wrapped model on this rank's micro-batch."""
        return self.module(*args, **kwargs)

    def backward(self, loss: torch.Tensor) -> None:
        """Backpropagate ``loss`` (a scalar); each unit's shard gradient is reduced on the way."""
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ValueError("loss must be a scalar tensor")
        loss.backward()

    def step(self) -> None:
        """Optimizer step on the fp32 master shards; drops hpZ secondary copies (now stale)."""
        if self.optimizer is None:
            raise RuntimeError("this engine was built with optimizer=None; update the shards "
                               "yourself, then call engine.invalidate()")
        self.optimizer.step()
        self.zero_grad()
        self.invalidate()

    def invalidate(self) -> None:
        """Forget hpZ secondary copies (call after changing the shards outside :meth:`step`)."""
        for unit in self.units:
            unit.secondary = None

    def zero_grad(self, set_to_none: bool = True) -> None:  # type: ignore[override]
        for unit in self.units:
            if set_to_none:
                unit.shard.grad = None
            elif unit.shard.grad is not None:
                unit.shard.grad.zero_()

    def train_step(self, inputs: torch.Tensor, targets: torch.Tensor,
                   loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> float:
        """forward + backward + step on this rank's micro-batch; returns this rank's loss."""
        loss = loss_fn(self(inputs), targets)
        self.backward(loss)
        self.step()
        return float(loss.detach())

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """Exact fp32 parameters of the whole model (a collective: every rank must call it)."""
        codec = CastCodec(torch.float32)
        out: dict[str, torch.Tensor] = {}
        for unit in self.units:
            got = ring_all_gather(self.comm, codec.encode(unit.shard.detach()), self._all,
                                  "state_gather")
            flat = torch.cat([codec.decode(pl, unit.shard_numel) for pl in got])
            for name, view in unit.views(flat).items():
                out[f"{unit.name}.{name}" if unit.name else name] = view.clone()
        return out

    @property
    def num_parameters(self) -> int:
        """Real (unpadded) parameter count of the wrapped model."""
        return sum(u.numel for u in self.units)

    @property
    def padded_parameters(self) -> int:
        """Parameters as communicated: sum over units of N * S (padding included)."""
        return sum(u.shard_numel * self.world_size for u in self.units)

    def secondary_nbytes(self) -> int:
        """Bytes held in hpZ secondary partitions right now (M/G per rank after a forward)."""
        return sum(u.secondary.numel() for u in self.units if u.secondary is not None)

"""MAML baseline (A.1): first-order MAML with the three training levels as tasks.

The meta-objective finds an initialisation from which one inner gradient step (alpha = 0.05)
on a small support set of a level's demonstrations solves that level. Before rollout at any
evaluated level, the model is adapted the same way on a few-shot support set of oracle
demonstrations of that level (seeds disjoint from the evaluation seeds). Memoryless MLP with
the same input and heads as the RNN baseline.
"""

from __future__ import annotations

import copy

import torch
from torch.func import functional_call

from indgen_sim.blockenv.models.base import BlockEnvModel
from indgen_sim.blockenv.models.common import CELLS, IndependentHeads, mlp, obs_vector


class MAMLPolicy(BlockEnvModel):
    name = "maml"
    data = "tasks"

    def __init__(self, d: int = 128, inner_lr: float = 0.05, inner_steps: int = 1, support_episodes: int = 5):
        super().__init__(d=d, inner_lr=inner_lr, inner_steps=inner_steps, support_episodes=support_episodes)
        self.enc = mlp(CELLS + 1, d)
        self.heads = IndependentHeads(d)

    def forward_logits(self, grids, levels, params=None):
        x = obs_vector(grids, levels)
        if params is None:
            return self.heads(self.enc(x))
        return self._call(params, x)

    def _call(self, params, x):
        def sub(prefix):
            return {k[len(prefix) + 1 :]: v for k, v in params.items() if k.startswith(prefix + ".")}

        h = functional_call(self.enc, sub("enc"), (x,))
        return functional_call(self.heads, sub("heads"), (h,))

    def step_loss(self, params, steps):
        logits = self.forward_logits(steps["grids"], steps["levels"], params)
        return IndependentHeads.loss(logits, steps["actions"])

    def inner(self, params, support, create_graph=False):
        """alpha-sized gradient steps on the support set (first order: gradients not differentiated)."""
        for _ in range(self.config["inner_steps"]):
            grads = torch.autograd.grad(
                self.step_loss(params, support), list(params.values()), create_graph=create_graph
            )
            params = {n: p - self.config["inner_lr"] * g for (n, p), g in zip(params.items(), grads, strict=True)}
        return params

    def meta_loss(self, tasks):
        """FOMAML: sum over tasks of the query loss at the adapted parameters. Gradients of the
        inner step are not differentiated, so backward() gives the first-order meta-gradient."""
        params = dict(self.named_parameters())
        total = 0.0
        for support, query in tasks:
            fast = self.inner(params, support)
            fast = {n: params[n] + (f - params[n]).detach() for n, f in fast.items()}
            total = total + self.step_loss(fast, query)
        return total / len(tasks), {"loss": total.item() / len(tasks)}

    def adapt(self, support):
        adapted = copy.deepcopy(self)
        params = {n: p.detach().requires_grad_(True) for n, p in adapted.named_parameters()}
        with torch.enable_grad():
            fast = adapted.inner(params, support)
        with torch.no_grad():
            for n, p in adapted.named_parameters():
                p.copy_(fast[n])
        return adapted

    def logits(self, state, grids, prev_actions, step):
        return self.forward_logits(grids, state["levels"])

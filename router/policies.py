"""Routing policies: small registered classes that pick an arm for a request.

A policy gets the arms' weights and the router settings once, then `choose(key)` per
request (`key` is the sticky key or None). New policies register under a name;
`[router] policy = "..."` picks one. No if/elif on policy names anywhere.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping
from typing import Protocol

from router.bucketing import BucketTable
from router.settings import RouterSettings

__all__ = ["RoutingPolicy", "create_policy", "policy_names", "register_policy"]


class RoutingPolicy(Protocol):
    def choose(self, key: str | None) -> str: ...


PolicyFactory = Callable[[Mapping[str, float], RouterSettings], RoutingPolicy]
_POLICIES: dict[str, PolicyFactory] = {}


def register_policy(name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        _POLICIES[name] = cls
        return cls

    return deco


def policy_names() -> list[str]:
    return sorted(_POLICIES)


def create_policy(name: str, weights: Mapping[str, float], settings: RouterSettings) -> RoutingPolicy:
    factory = _POLICIES.get(name)
    if factory is None:
        raise ValueError(f"router.policy: unknown policy {name!r}; valid: {', '.join(policy_names())}")
    return factory(weights, settings)


@register_policy("weighted")
class WeightedPolicy:
    """Sticky hash bucketing with a key; seeded weighted random without one."""

    def __init__(self, weights: Mapping[str, float], settings: RouterSettings) -> None:
        self.table = BucketTable(weights, settings.hash_salt)
        self._arms = sorted(self.table.weights)
        self._cum = list(itertools.accumulate(self.table.weights[a] for a in self._arms))
        self._rng = random.Random(settings.seed)

    def choose(self, key: str | None) -> str:
        if key:
            return self.table.arm_for_key(key)
        return self._rng.choices(self._arms, cum_weights=self._cum)[0]


@register_policy("round_robin")
class RoundRobinPolicy:
    """Cycle through arms with weight > 0 (ignores the key and the weights' sizes)."""

    def __init__(self, weights: Mapping[str, float], settings: RouterSettings) -> None:
        arms = sorted(a for a, w in weights.items() if w > 0)
        if not arms:
            raise ValueError("weights: at least one arm needs a weight > 0")
        self._cycle = itertools.cycle(arms)

    def choose(self, key: str | None) -> str:
        return next(self._cycle)

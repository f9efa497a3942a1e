"""Sticky, stateless arm assignment: hash key -> bucket in [0, 10000) -> arm.

Scheme (identical on every replica; a pure function of the config):

1. `bucket = blake2b(salt + ":" + key) mod 10000`.
2. Each bucket is owned by the arm with the lowest weighted-rendezvous score
   `-ln(u(salt, arm, bucket)) / weight(arm)`, `u` a second hash mapped into (0, 1).
   The bucket -> arm table (10,000 entries) is built once per routing table.

Why rendezvous rather than contiguous ranges: with three or more arms no layout of
contiguous ranges can let every arm grow while the other arms only shrink in place
(raising the left-most arm pushes the middle arm's range sideways). Rendezvous gives
the property for any number of arms: an arm's score depends only on its own weight,
so raising arm A (weights are relative; editing one weight rescales the others
together) lowers only A's scores; a bucket either keeps its owner or moves INTO A,
never between two other arms. Lowering A only moves buckets OUT of A, spread over
the others in proportion to their weights; adding an arm only moves buckets into it.
Each arm owns about weight/sum(weights) of the buckets (binomial noise: +-0.4% at 80/20).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

__all__ = ["NUM_BUCKETS", "BucketTable", "bucket_of"]

NUM_BUCKETS = 10_000
_TWO64 = float(2**64)


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def bucket_of(key: str, salt: str = "abtest") -> int:
    """The key's bucket in [0, NUM_BUCKETS)."""
    return _h64(f"{salt}:{key}") % NUM_BUCKETS


def _score(salt: str, arm: str, bucket: int, weight: float) -> float:
    u = (_h64(f"{salt}|{arm}|{bucket}") + 0.5) / _TWO64  # in (0, 1)
    return -math.log(u) / weight


class BucketTable:
    """Bucket -> arm, for one set of weights."""

    def __init__(self, weights: Mapping[str, float], salt: str = "abtest") -> None:
        arms = {a: float(w) for a, w in weights.items() if w > 0}
        if not arms:
            raise ValueError("weights: at least one arm needs a weight > 0")
        self.salt = salt
        self.weights = arms
        names = sorted(arms)
        self._owner: list[str] = [self._best(names, b) for b in range(NUM_BUCKETS)]

    def _best(self, names: list[str], bucket: int) -> str:
        return min(names, key=lambda a: _score(self.salt, a, bucket, self.weights[a]))

    def arm_for_bucket(self, bucket: int) -> str:
        return self._owner[bucket]

    def arm_for_key(self, key: str) -> str:
        return self._owner[bucket_of(key, self.salt)]

    def shares(self) -> dict[str, float]:
        """Fraction of buckets each arm owns."""
        out = {a: 0 for a in self.weights}
        for a in self._owner:
            out[a] += 1
        return {a: n / NUM_BUCKETS for a, n in out.items()}

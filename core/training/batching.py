"""Batches by length, sized in tokens (as fairseq's ``--max-tokens`` and tensor2tensor's length buckets).

A fixed number of sentences per batch pads every row to the batch's longest one: on the tiny en-fr corpus a
64-sentence batch holds 855 real source tokens in 1,280 slots and 1,015 real target tokens in 1,728, so a third of
the compute goes to padding. :func:`token_batches` instead groups sentences of similar length and cuts batches by
their *padded* size, ``len(batch) * max(length in batch) <= max_tokens``: short sentences come many to a batch,
long ones few.

One epoch, for a given ``(seed, epoch)``:

1. shuffle all example indices (a ``torch.Generator`` seeded with ``seed * 1_000_003 + epoch``, so that
   ``(seed, epoch)`` and ``(seed + 1, epoch - 1)`` differ);
2. cut the shuffled order into *pools* of about ``pool_batches`` typical batches (100 by default) and sort each
   pool by length (stable, so equal lengths stay in random order): similar lengths share a batch, and the
   pool keeps some randomness about which sentences meet;
3. walk each sorted pool and close a batch when one more example would make ``len(batch) * max_length`` exceed
   ``max_tokens``. An example longer than ``max_tokens`` on its own goes alone in a batch (the only batches
   that exceed the budget);
4. shuffle the order of all batches (same generator), so a run does not see short sentences, then long ones;
5. shard among ``world`` ranks: keep the first ``(n_batches // world) * world`` batches and give rank ``r`` every
   ``world``-th batch from ``r``. Every rank gets the same number of batches (DDP steps in lock step). The
   ``n_batches % world`` leftover batches (at most ``world - 1``, random ones since the order was shuffled) are
   dropped for that epoch only; the next epoch is cut differently and sees them. With ``world = 1`` nothing is
   dropped: every index appears exactly once per epoch.

What a "length" is, is the caller's choice. ``core.training.tasks.TranslationTask`` passes, like fairseq, the wider
side of a pair, ``max(len(src) + 1, len(tgt) + 1)`` (+1 for EOS / BOS): the budget then bounds both the
padded source ``[B, Ts]`` and the padded target ``[B, Tt]`` of a batch, each ``<= max_tokens`` slots.

Pure Python and torch (only for its seeded generator); the result is a pure function of the arguments.
"""
from __future__ import annotations

import torch

POOL_BATCHES = 100


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator that shuffles epoch ``epoch`` of a run with ``seed`` (seeded ``seed * 1_000_003 + epoch``)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


def padded_size(batch: list[int], lengths: list[int]) -> int:
    """``len(batch) * max(lengths in batch)``: the slots a batch fills once padded to its longest example."""
    return len(batch) * max(lengths[i] for i in batch) if batch else 0


def _cut(order: list[int], lengths: list[int], max_tokens: int) -> list[list[int]]:
    """Greedy cut of ``order`` (already sorted by length within a pool) into batches within ``max_tokens``."""
    batches, cur, widest = [], [], 0
    for i in order:
        w = max(widest, lengths[i])
        if cur and (len(cur) + 1) * w > max_tokens:
            batches.append(cur)
            cur, w = [], lengths[i]
        cur.append(i)
        widest = w
    if cur:
        batches.append(cur)
    return batches


def token_batches(lengths: list[int], max_tokens: int, seed: int, epoch: int, rank: int = 0, world: int = 1,
                  pool_batches: int = POOL_BATCHES) -> list[list[int]]:
    """One epoch's batches of example indices for ``rank`` of ``world`` (see the module docstring).

    ``lengths[i]`` is example ``i``'s length as the caller counts it; each returned batch ``b`` has
    ``len(b) * max(lengths[j] for j in b) <= max_tokens``, except a batch holding one example longer than
    ``max_tokens``. Every rank gets ``n_batches // world`` batches; the rest (at most ``world - 1``) are
    dropped this epoch.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"need 0 <= rank < world, got rank {rank}, world {world}")
    if pool_batches < 1:
        raise ValueError(f"pool_batches must be >= 1, got {pool_batches}")
    n = len(lengths)
    if n == 0:
        return []
    if min(lengths) < 1:
        raise ValueError("every length must be >= 1")
    gen = epoch_generator(seed, epoch)
    order = torch.randperm(n, generator=gen).tolist()
    typical = max(1, max_tokens // max(1, round(sum(lengths) / n)))  # examples in a batch of mean length
    pool = typical * pool_batches
    batches = []
    for start in range(0, n, pool):
        chunk = sorted(order[start:start + pool], key=lengths.__getitem__)  # stable: ties keep the random order
        batches += _cut(chunk, lengths, max_tokens)
    batches = [batches[i] for i in torch.randperm(len(batches), generator=gen).tolist()]
    per_rank = len(batches) // world
    return batches[rank:per_rank * world:world]


def epoch_size(lengths: list[int], max_tokens: int, seed: int, epoch: int, world: int = 1,
               pool_batches: int = POOL_BATCHES) -> int:
    """Batches per rank in that epoch (the same on every rank)."""
    return len(token_batches(lengths, max_tokens, seed, epoch, 0, world, pool_batches))

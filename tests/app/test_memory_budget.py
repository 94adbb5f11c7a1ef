"""Issue 21 defect 3: bounded work per request. One URL (/attention?model=minilm&text= + 499 × "cat ") took ≈7 CPU
minutes and drove the server from 3.8 to 10.8 GB: the attention exports were built on every render, each cached run
held ≈256 MB and the cache kept 64 of them. Now a model reads at most the tokens whose largest trace and exports fit
a stated budget (core.io.budget), exports are built on click, and cached results are bounded in bytes (app.cache)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from app import cache, export
from core.io import budget, registry
from core.inference.runner import run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


def _models() -> list[str]:
    names = list(registry.bundled())
    try:
        registry.load("minilm")
        names.append("minilm")
    except Exception:  # the pretrained package is optional
        pass
    return names


MODELS = _models()
LONG = "The cat sat on the mat, and the dog didn't cross the street because it was tired. " * 24  # ≈2,000 characters


@pytest.mark.parametrize("name", MODELS)
def test_the_budget_measures_the_trace_exactly(name):
    """core.io.budget's polynomial (fitted on three short runs) is the trace's real size at the token limit."""
    model = registry.load(name).model
    limit = budget.token_limit(model)
    measured, weights = budget._measure(model, limit)
    est = budget.estimate(model, limit)
    assert est["trace"] == measured and est["weights"] == weights, (est, measured, weights)
    assert est["trace"] <= budget.TRACE_BYTES and est["csv"] <= budget.EXPORT_BYTES


@pytest.mark.parametrize("name", MODELS)
def test_the_worst_input_is_cut_to_the_budget_and_its_exports_fit(name):
    """The longest sentence (and target) a page accepts: the run reads at most the budgeted tokens, its trace and
    both exports fit the budget, and the exports are valid files."""
    ck = registry.load(name)
    limit = budget.limit_positions(ck.model)
    res = run(ck, LONG, LONG if ck.model.cfg.kind == "encoder-decoder" else None)
    assert len(res.src_ids) <= limit and len(res.tgt_ids) <= limit
    assert res.trace.nbytes() <= budget.TRACE_BYTES
    if ck.model.cfg.max_len > limit:
        assert any(f"reads at most {limit - (len(ck.tokenizer.frame([])) or 1)}" in n for n in res.notices), res.notices
    est = export.estimate(res)
    assert max(est.values()) <= budget.EXPORT_BYTES, est
    data, table = export.attention_json(res), export.attention_csv(res)
    assert len(data) <= est["json"] and len(table) <= est["csv"]
    assert json.loads(data)["source_tokens"] == res.src_tokens


def test_the_csv_token_bytes_are_what_the_csv_writer_writes():
    """export.estimate counts each token field exactly (its upper bound rests on the other fields only)."""
    import csv
    import io
    for token in ("because", ",", '"', 'say "hi", then', "a\nb", "\r", "café", "▁über", "", "Ġ'"):
        buf = io.StringIO()
        csv.writer(buf).writerow([token, "x"])  # as attention_csv writes: minimal quoting, CRLF
        assert export._csv_field_bytes(token) == len(buf.getvalue().encode()) - len(",x\r\n"), token


def test_a_model_refuses_more_positions_than_its_budget():
    model = registry.load("mlm").model
    model.position_limit = 16
    with pytest.raises(ValueError, match="maximum is 16 here"):
        model(torch.full((1, 17), 5))


def test_an_export_with_huge_tokens_is_refused_before_it_is_built():
    ck = registry.load("lm")
    res = run(ck, "The cat sat on the mat.")
    res.src_tokens = res.tgt_tokens = ["x" * 2_000_000] * len(res.src_tokens)
    assert export.too_large(res)
    with pytest.raises(ValueError, match="Shorten the sentence"):
        export.attention_csv(res)


def test_cached_results_are_bounded_in_bytes_not_entries(monkeypatch):
    monkeypatch.setattr(cache, "CACHE_BYTES", 8 << 20)
    cache.clear()
    calls = []

    @cache.bounded
    def big(i: int) -> torch.Tensor:
        calls.append(i)
        return torch.zeros(1 << 18)  # 1 MiB

    for i in range(40):
        big(i)
        assert cache.used() <= 8 << 20
    assert big(39) is big(39) and calls.count(39) == 1  # recent results are kept ...
    big(0)
    assert calls.count(0) == 2  # ... the least recently used went first

    @cache.bounded
    def huge() -> torch.Tensor:
        calls.append("huge")
        return torch.zeros(1 << 20)  # 4 MiB: over a quarter of the budget, returned but not kept

    huge(), huge()
    assert calls.count("huge") == 2 and cache.used() <= 8 << 20
    cache.clear()


def _stream_of_cheap_traces(n: int, expensive) -> list:
    """Cache one small result that takes 0.2 s, then ``n`` results of 1 MiB that take no time; returns the calls."""
    calls = []

    @cache.bounded
    def big(i: int) -> torch.Tensor:
        calls.append(i)
        return torch.zeros(1 << 18)

    expensive()
    for i in range(n):
        big(i)
    return calls


@pytest.mark.parametrize("policy", ["cost", "lru"])
def test_a_small_costly_result_outlives_a_stream_of_big_cheap_ones(monkeypatch, policy):
    """The classroom's patching result (kilobytes, a second to compute) must not be pushed out by a visit to the
    heavy pages (megabytes of traces, computed in no time); plain LRU pushed it out."""
    monkeypatch.setattr(cache, "CACHE_BYTES", 8 << 20)
    monkeypatch.setattr(cache, "POLICY", policy)
    cache.clear()
    runs = []

    @cache.bounded
    def patching() -> list:
        runs.append(1)
        time.sleep(0.2)
        return [0.5] * 16

    _stream_of_cheap_traces(40, patching)
    patching()
    assert len(runs) == (1 if policy == "cost" else 2)
    assert cache.used() <= 8 << 20
    cache.clear()


def test_a_costly_result_of_the_same_size_ages_out(monkeypatch):
    """Priorities age: a result that cost ten times more than the others but is never read again is evicted after
    about ten budgets' worth of newer ones, not kept for ever."""
    monkeypatch.setattr(cache, "CACHE_BYTES", 8 << 20)
    cache.clear()
    runs = []

    @cache.bounded
    def slow() -> torch.Tensor:
        runs.append(1)
        time.sleep(0.1)
        return torch.zeros(1 << 18)

    _stream_of_cheap_traces(12, slow)
    slow()
    assert len(runs) == 1  # kept past the first budget's worth (LRU would have dropped it after 7)
    cache.clear()
    _stream_of_cheap_traces(200, slow)
    slow()
    assert len(runs) == 3
    cache.clear()


def test_a_cached_trace_counts_its_deferred_maps():
    """A Trace computes attention maps when first read; the cache counts them up front."""
    from core.trace import Trace
    ck = registry.load("lm")
    trace = Trace()
    ck.model.eval()
    with torch.no_grad():
        ck.model(torch.full((1, 32), 5), trace=trace)
    counted = cache.nbytes(trace)
    assert counted == trace.materialize().nbytes()


def test_the_attention_page_builds_its_exports_only_on_click(monkeypatch):
    from apptest import open_page
    built = []
    monkeypatch.setattr(export, "attention_json", lambda res: built.append("json") or b"{}")
    monkeypatch.setattr(export, "attention_csv", lambda res: built.append("csv") or b"")
    at = open_page("attention.py", "lm", text="The cat sat on the mat.")
    assert [b.proto.label for b in at.get("download_button")] == ["Attention as JSON", "Attention as CSV"]
    assert built == []  # rendering the page built no export


def test_models_derived_from_a_limited_model_keep_its_limit():
    """The GQA conversion and the speculative draft read no more positions than the model they come from."""
    from core.probes import heads
    from core.variants import speculative
    lm = registry.load("lm").model
    lm.position_limit = 20
    assert heads.to_gqa(lm, 1).max_positions == 20
    assert speculative.truncated_draft(lm, 1).max_positions == 20

"""AppTest of two sections drawn alone: the Q·K walkthrough's "Attention as a Hopfield update" on the reverse model,
and the Positional page's binary-counter expander; their readings from made-up numbers."""
from __future__ import annotations

import math
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

pytestmark = pytest.mark.usefixtures("one_thread")
SENTENCE = "3 1 4 1 5 9 2 6"


def _hopfield_section(name: str, head: int, query: int):
    from app import qk_view
    from app.shell import load_model
    from core.inference.runner import run
    from core.probes.analysis import attention_row
    res = run(load_model("reverse"), "3 1 4 1 5 9 2 6", None)
    kind = name.split(".")[0] if "cross" not in name else "cross"
    q_tokens, k_tokens = res.tokens(kind)
    qk_view.hopfield_section(7, attention_row(res.trace, name, head, query), k_tokens, q_tokens[query])


def test_hopfield_section_starts_at_the_heads_row_and_its_energy_falls():
    from app.shell import load_model
    from core.inference.runner import run
    from core.probes.analysis import hopfield_updates
    at = ran(AppTest.from_function(_hopfield_section, args=("encoder.1.self_attn", 0, 2), default_timeout=60))
    res = run(load_model("reverse"), SENTENCE, None)
    traced = res.trace["encoder.1.self_attn.weights"][0, 0, 2]
    q, k = res.trace["encoder.1.self_attn.q"][0, 0, 2], res.trace["encoder.1.self_attn.k"][0, 0]
    d_k = q.shape[0]
    drawn = charts(at)
    first = torch.tensor(drawn["qk_hop_1"]["data"][0]["z"], dtype=torch.float64)
    assert first.shape == (5, len(traced)) and torch.allclose(first[0], traced.double(), atol=1e-6)
    for line in drawn["qk_hop_energy"]["data"]:
        assert all(b <= a + 1e-9 for a, b in zip(line["y"], line["y"][1:])), line["name"]
    table = at.dataframe[0].value
    want = {m: hopfield_updates(k, q, m / math.sqrt(d_k), 5) for m in (1, 4, 16)}
    for u in (1, 5):  # each cell: the largest weight, its key, the keys holding 90 %
        cells = [re.fullmatch(r"([0-9.]+) on (.*), (\d+) for 90 %", c).groups() for c in table[f"update {u}"]]
        assert [float(w) for w, _, _ in cells] == [round(float(want[m]["weights"][u - 1].max()), 2)
                                                   for m in (1, 4, 16)]
        assert [int(n) for _, _, n in cells] == [want[m]["keys_90"][u - 1] for m in (1, 4, 16)]
    assert list(table["E rose?"]) == ["no"] * 3
    told = next(c.value for c in at.caption if c.value.startswith("Update 1 with β"))
    assert float(re.search(r"max \|difference\| = ([0-9.e+-]+)\. ", told).group(1)) < 1e-5
    reading = next(m.value for m in at.markdown if m.value.startswith("**Reading.**"))
    assert ("metastable" in reading) == (want[1]["keys_90"][0] > 1)
    at.slider(key="qk_hop_steps").set_value(9)
    assert len(charts(ran(at))["qk_hop_16"]["data"][0]["z"]) == 9


def test_a_causal_query_stores_only_the_keys_it_sees():
    """Decoder self-attention: the keys after the query are not stored (blank cells), and the first row is still the
    head's weights; the first query sees one key only and gets a message instead."""
    from app.shell import load_model
    from core.inference.runner import run
    at = ran(AppTest.from_function(_hopfield_section, args=("decoder.0.self_attn", 1, 0), default_timeout=60))
    assert any("one key only" in i.value for i in at.info) and "qk_hop_1" not in charts(at)
    at = ran(AppTest.from_function(_hopfield_section, args=("decoder.0.self_attn", 1, 3), default_timeout=60))
    row = charts(at)["qk_hop_1"]["data"][0]["z"][0]
    traced = run(load_model("reverse"), SENTENCE, None).trace["decoder.0.self_attn.weights"][0, 1, 3]
    assert all(v is None for v in row[4:]) and len(row) > 4
    assert torch.allclose(torch.tensor(row[:4], dtype=torch.float64), traced[:4].double(), atol=1e-6)


def _run(first_weights, keys_90, last_weights):
    w = torch.tensor([first_weights, last_weights], dtype=torch.float64)
    return {"weights": w, "keys_90": keys_90}


def test_the_hopfield_reading_follows_the_numbers():
    from app.qk_view import hopfield_reading
    toks = ["a", "b", "c"]
    mixed = {1: _run([0.5, 0.3, 0.2], [3, 2], [0.6, 0.3, 0.1]), 4: _run([0.8, 0.15, 0.05], [2, 1], [0.95, 0.05, 0]),
             16: _run([0.99, 0.01, 0], [1, 1], [1, 0, 0])}
    said = hopfield_reading(mixed, toks, 8, 3, top_score=0)
    assert "3 of the 3 stored keys" in said and "metastable" in said and "still mixes 2 keys" in said
    assert "first holds 90 % of the weight at update 2; the state ends on “a”" in said
    assert "retrieves the nearest stored key" in said
    sharp = {1: _run([0.95, 0.05, 0], [1, 1], [1, 0, 0]), 4: _run([0.95, 0.05, 0], [1, 2], [0.6, 0.4, 0]),
             16: _run([0.9, 0.1, 0], [1, 1], [0, 1, 0])}
    said = hopfield_reading(sharp, toks, 8, 3, top_score=0)
    assert "already lands on one stored key: retrieval" in said and "settles on “a”" in said
    assert "at update 1, but after 2 updates the state mixes 2 keys again" in said
    assert "The key with the largest q·k is “a”; the updates moved on from it" in said


def _binary_section(d_model: int, base: int):
    from app import positional_view
    positional_view.binary_counter(d_model, base)


def test_binary_counter_draws_the_check_and_reads_it():
    from core.probes.positions import binary_check
    at = ran(AppTest.from_function(_binary_section, args=(256, 10000), default_timeout=30))
    bc = binary_check(256, 10000.0)
    drawn = charts(at)
    assert drawn["pe_bits"]["data"][0]["z"] == bc["bits"].tolist()
    assert drawn["pe_sign_bits"]["data"][0]["z"] == bc["signs"].tolist()
    assert len(drawn["pe_bits"]["data"][0]["z"]) == 16 and len(drawn["pe_bits"]["data"][0]["z"][0]) == 4
    table = at.dataframe[0].value
    assert list(table["positions that agree"]) == [f"{m} of 16" for m in bc["matches"]]
    said = next(m.value for m in at.markdown if m.value.startswith("**Reading.**"))
    assert "bit 0 (period 2) and bit 1 (period 4) have no counterpart" in said
    assert f"agrees at {bc['matches'][0]} and {bc['matches'][1]} of 16" in said
    assert f"factor of {10000 ** (2 / 256):.3f}" in said


def test_the_binary_reading_follows_the_numbers():
    from app.positional_view import binary_reading
    bits = torch.zeros(16, 4, dtype=torch.long)
    bc = {"bits": bits, "periods": [2, 4, 8, 16], "dims": [0, 0, 6, 26], "wavelengths": [6.28, 6.28, 7.8, 16.01],
          "matches": [6, 8, 16, 15]}
    said = binary_reading(bc, 256, 10000)
    assert "agree at every position" in said and "15 of 16 positions: the sign changes" in said
    assert "holds, roughly, for the slower bits" in said
    said = binary_reading({**bc, "matches": [6, 8, 9, 10]}, 256, 10000)
    assert "the two drift apart" in said and "does not hold here" in said


def test_the_binary_reading_at_a_tiny_d_model_does_not_claim_dimensions_between_bits():
    """QA s59: at d_model 8 the wavelengths grow 10× a pair, so no dimension lies between two bits; at base 10 only
    bit 3 matches, not "the slower bits"."""
    from app import positional_view as pv
    from core.probes import positions
    told = pv.binary_reading(positions.binary_check(8, 10000.0), 8, 10000)
    assert "lie between two bits" not in told and "several bits have to share" in told
    told = pv.binary_reading(positions.binary_check(8, 10.0), 8, 10)
    assert "for bit 3 only" in told and "the slower bits" not in told
    assert "many dimensions lie between two bits" in pv.binary_reading(positions.binary_check(256, 1e4), 256, 10000)

"""The Decode page's last section for a language model, "Is it quoting its training text?": off by default; switched
on, the prompt's and the finished continuation's longest verbatim run and n-gram shares are those of a brute-force
search of the training stream (rebuilt here by the training task itself), the training passage is quoted with the
run highlighted, and the shipped greedy-against-sampling table is shown as stored."""
import numpy as np

from apptest import open_page, ran

from app.shell import load_model
from app.text import md
from core.inference import decoding
from core.probes import summaries
from core.training.tasks import make_task

TEXT = "The dog was hungry."
COLUMN = "longest verbatim span (tokens)"


def brute(stream, q):
    """(longest run of ``q`` found in ``stream``, its first start in ``q``, its occurrences; n → (n-grams of ``q``
    found, n-grams of ``q``)), by comparing every window of the stream."""
    best, grams = (0, 0, 0), {}
    for n in range(1, len(q) + 1):
        windows = np.lib.stride_tricks.sliding_window_view(stream, n)
        found = [int((windows == q[i:i + n]).all(axis=1).sum()) for i in range(len(q) - n + 1)]
        grams[n] = (sum(f > 0 for f in found), len(found))
        if any(found):
            i = next(k for k, f in enumerate(found) if f)
            best = (n, i, found[i])
    return best, grams


def row_of(at, text):
    table = next(d.value for d in at.dataframe if COLUMN in d.value.columns)
    return table[table["text"] == text].iloc[0]


def test_the_verbatim_check_matches_a_brute_force_search_of_the_training_stream():
    at = open_page("decode.py", "lm-tiny", text=TEXT)
    assert "Is it quoting its training text?" in [h.value for h in at.subheader]
    assert not [d for d in at.dataframe if COLUMN in d.value.columns]  # off by default: nothing indexed
    assert any(c.value.startswith("Switch this on to look for the longest run") for c in at.caption)
    next(t for t in at.toggle if t.key == "verbatim_on").set_value(True)
    next(b for b in at.button if b.label == "Run to end").click()
    ran(at)
    ck = load_model("lm-tiny")
    stream = make_task("lm-tiny", tokenizer=ck.tokenizer).train_stream.numpy()
    prompt = np.array(ck.tokenizer.encode(TEXT))
    output = np.array(decoding.generate(ck.model, prompt=prompt.tolist(), method="greedy", max_new=40).ids)
    for label, q in (("your prompt", prompt), ("the model's continuation", output)):
        (length, start, count), grams = brute(stream, q)
        row = row_of(at, label)
        assert (row["tokens"], row[COLUMN], row["times that span occurs in training"]) == (len(q), length, count)
        for n in (4, 8, 16):
            found, total = grams.get(n, (0, 0))
            want = f"{found} of {total} ({100 * found / total:.0f} %)" if total else f"— (fewer than {n} tokens)"
            assert row[f"{n}-grams found in training"] == want
        span = md(ck.tokenizer.decode(q[start:start + length].tolist()))
        said = f"**Longest span of {md(label)}**: {length} tokens, {span} "
        assert any(m.value.startswith(said) for m in at.markdown)
        assert any(f":orange-background[**{span}**]" in m.value for m in at.markdown)  # the passage, highlighted
    shipped = summaries.verbatim_summary(ck, "lm-tiny")
    table = next(d.value for d in at.dataframe if "mean longest span" in d.value.columns)
    assert list(table["continuation"]) == [r["kind"] for r in shipped["rows"]]
    for r, (_, shown) in zip(shipped["rows"], table.iterrows()):
        f, t = r["found"]["8"], r["total"]["8"]
        assert shown["8-grams found"] == f"{f} of {t} ({100 * f / t:.0f} %)"
        assert (shown["mean longest span"], shown["largest longest span"]) == (round(r["longest_mean"], 1),
                                                                              r["longest_max"])
    assert [r["continuations"] for r in shipped["rows"]] == [16, 16, 48]
    assert any("Greedy decoding" in m.value and "8-grams found" in m.value for m in at.markdown)

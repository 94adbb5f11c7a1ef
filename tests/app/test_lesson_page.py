"""AppTest: the Lesson walks all its steps on the class's sentence, follows the URL, and exports a safe handout."""
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import type_sentence

from app import lesson

ROOT = Path(__file__).resolve().parents[2]
SEED = "The animal didn't cross the street because it was too tired."
XSS = '</script><img src=x onerror="window.__pwned=1">'


def open_lesson(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("../pages/lesson.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at):
    """The step's table as the learner reads it (a static table: its cells are md()-escaped Markdown)."""
    frame = at.table[0].value
    frame.columns = [re.sub(r"\\(.)", r"\1", str(c)) for c in frame.columns]
    return frame.map(lambda v: re.sub(r"\\(.)", r"\1", v) if isinstance(v, str) else v)


def charts(at):
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def step_number(at) -> int:
    return int(re.match(r"(\d+) ·", at.header[0].value).group(1))


def test_next_and_back_walk_every_step():
    at = open_lesson(model="en-fr", text=SEED)
    seen = []
    for i in range(len(lesson.STEPS)):
        assert step_number(at) == i + 1
        assert not at.error, [e.value for e in at.error]
        assert at.caption[0].value.startswith("Source:")
        if i == 0:
            tokens = table(at)["token"].tolist()
            assert tokens[:3] == ["The", "animal", "didn"] and tokens[-1] == "[EOS]"
            assert charts(at)[0]["layout"]["xaxis"]["ticktext"] == tokens
        assert charts(at), f"step {i + 1} drew no figure"
        seen.append(at.header[0].value)
        nxt = next(b for b in at.button if b.label.startswith("Next"))
        assert nxt.disabled == (i == len(lesson.STEPS) - 1)
        if i < len(lesson.STEPS) - 1:
            nxt.click().run()
            assert not at.exception, [e.value for e in at.exception]
    assert len(set(seen)) == len(lesson.STEPS)
    last = str(len(lesson.STEPS))
    assert at.query_params["step"] in (last, [last])  # the URL names the step shown
    next(b for b in at.button if b.label.startswith("◀")).click().run()
    assert step_number(at) == len(lesson.STEPS) - 1


def test_the_step_follows_the_class_sentence():
    at = open_lesson(model="en-fr", text="The dog is tired.", step="2")
    rows = charts(at)[0]["layout"]["yaxis"]["ticktext"]
    assert rows == ["The", "dog", "is", "tired", ".", "[EOS]"]
    type_sentence(at, "I am happy.")
    assert charts(at)[0]["layout"]["yaxis"]["ticktext"] == ["I", "am", "happy", ".", "[EOS]"]


def test_url_opens_a_step_and_a_bad_step_is_refused():
    at = open_lesson(model="en-fr", step="4")
    assert step_number(at) == 4
    assert "by hand" in at.header[0].value
    for bad in ("42", "0", "11", "-1", "two"):
        at = open_lesson(model="en-fr", step=bad)
        assert step_number(at) == 1, bad
        assert any("step" in w.value and "1–10" in w.value for w in at.warning), bad


def test_the_last_step_reads_the_class_sentence_twice_with_the_language_model():
    """Step 10: the bundled lm on the class's sentence read twice — its best induction head's map on exactly those
    tokens, and the numbers under it are core.find_heads.copy_twice's on that sentence."""
    from core import find_heads
    from core.io import registry
    at = open_lesson(model="en-fr", text=SEED, step="10")
    assert step_number(at) == 10 and not at.error and "induction head" in at.header[0].value
    ck = registry.load("lm")
    ids = ck.tokenizer.encode(SEED)
    r = find_heads.copy_twice(ck.model, ids, bos=find_heads.framing(ck)["bos"])
    best = max(max(row) for row in r["induction"])
    heat, loss = charts(at)
    assert heat["layout"]["xaxis"]["ticktext"][1:] == ck.tokenizer.display(ids + ids)
    assert len(loss["data"]) == 2 and loss["data"][1]["y"] == pytest.approx(r["second_copy"]["per_token"], abs=1e-6)
    text = " ".join(m.value for m in at.markdown)
    assert f"**{best:.0%}**" in text and f"**{r['second_copy']['mean']:.2f}**" in text, text
    assert r["second_copy"]["mean"] < r["first_copy"]["mean"]  # the shipped lm copies


def test_decoding_step_translates_the_seed_sentences_live():
    at = open_lesson(model="en-fr", text=SEED, step="8")
    text = re.sub(r"\\(.)", r"\1", " ".join(m.value for m in at.markdown))  # model output is md-escaped (app.text)
    assert "Der Pokal passt nicht in den Koffer, weil er zu groß ist." in text
    assert "parce qu'il était trop fatigué" in text and "parce qu'elle était trop large" in text
    # QA s58 item 16: "animal 0.98, an 0.00, animal 0.00" named two different tokens alike; the look-alike that
    # starts a word keeps its mark, as on the Decode page
    tops = [[n for n in re.split(r" \d\.\d\d(?:, |$)", top) if n] for top in table(at)["top 3"]]
    assert all(len(set(names)) == len(names) == 3 for names in tops), tops
    assert ["animal", "an", "▁animal"] in tops and "▁ marks the one that starts a new word" in text


def test_payoff_switches_heads_off_until_the_choice_itself_flips():
    """QA s58 item 2: the step said the pronoun "first changes with 8 of 32 off" while its table showed "Le animal …
    le rue": the greedy pronoun followed the broken article, and teacher-forced p(elle) rose. A flip now counts where
    the choice itself flips: fed the reference up to the pronoun, the right pronoun loses to the other (recounted
    here by hand from the scoreboard's ranking), and the text says the greedy words before the pronoun broke."""
    from app import coref_view
    from core.io import registry
    from core.probes import coref
    at = open_lesson(model="en-fr", text=SEED, step="9")
    assert step_number(at) == 9 and not at.error
    text = re.sub(r"\\(.)", r"\1", " ".join(m.value for m in at.markdown))
    k = re.search(r"the choice first flips with \*\*(\d+) of (\d+)\*\* off", text)
    assert k, text
    k, n = int(k.group(1)), int(k.group(2))
    assert 1 <= k <= n == 32  # en-fr: 4 decoder layers x 8 cross-attention heads
    ck = registry.load("en-fr")
    pair = [coref.ProbeItem(t, a, ("animal", "street")) for t, a in zip(coref.CLASSROOM_PAIRS[0], ("animal", "street"))]
    board = coref_view.scoreboard("en-fr", "cross")

    def flipped(j: int) -> bool:  # some sentence's right pronoun is no likelier than the other, j best heads off
        off = coref.heads_off(board, j)
        ps = [coref.pronoun_probabilities(ck, it.text, coref.reference(ck, it), ("il", "elle"), ablate=off or None)
              for it in pair]
        return ps[0]["il"] <= ps[0]["elle"] or ps[1]["elle"] <= ps[1]["il"]
    assert flipped(k) and not flipped(k - 1)
    rows = table(at)
    assert any(float(r) > float(w) for r, w in zip(rows["p(other pronoun), heads off"],
                                                    rows["p(right pronoun), heads off"]))  # the flip is in the table
    assert "Le animal" in " ".join(rows["heads off"]) and "also change words before the pronoun" in text


@pytest.mark.parametrize("model", ["en-fr", "en-de"])
def test_payoff_counts_the_heads_that_resolve_both_sentences(model):
    # recounted here from the attention links: a head counts when, in both sentences, the right noun gets at least
    # 0.05 more weight than the other (QA s58 item 3: en-fr's L1H1 led by +0.001 / -0.0003 and got a ✓)
    from core.probes import coref
    from core.io import registry
    from core.data import translation
    ck = registry.load(model)
    pair = [coref.ProbeItem(p.src, p.antecedent, p.candidates) for p in translation.probe_pairs("fr")[0]]
    right = []
    for it in pair:
        lk = coref.links(coref.probe_run(ck, it), it, "cross", coref.TARGET_PRONOUNS[coref.language(ck)])
        r = it.candidates.index(it.antecedent)
        right.append(lk[..., r] - lk[..., 1 - r] >= 0.05)
    n = int((right[0] & right[1]).sum())
    text = " ".join(m.value for m in open_lesson(model=model, text=SEED, step="9").markdown)
    if n:
        assert (f"✓ marks the {n} head{'s' if n > 1 else ''} that pick the right noun in **both** sentences, by at "
                "least 0.05 more attention weight than the other noun") in text, text
    else:
        assert "no head picks the right noun in **both** sentences" in text, text
    assert "Some heads point at the right noun" not in text
    needs = {"en-fr": "French needs il or elle", "en-de": "German needs er, sie or es"}[model]
    assert needs in text, text


def test_non_translation_model_falls_back_to_en_fr():
    at = open_lesson(model="minilm", step="7")
    assert any("en-fr" in re.sub(r"\\(.)", r"\1", i.value) for i in at.info)  # names are md-escaped
    assert step_number(at) == 7 and not at.error


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_sentence_gets_a_message(text):
    at = open_lesson(model="en-fr", text=text)
    assert any("empty" in i.value for i in at.info)
    assert not at.header


def test_handout_has_every_step_and_escapes_the_sentence():
    at = open_lesson(model="en-fr", text="The dog is tired. " + XSS)
    next(b for b in at.button if b.label == "Prepare the handout").click().run()
    assert not at.exception
    assert at.get("download_button"), "no download button"
    made_for, page = at.session_state["lesson_handout"]
    assert made_for[0] == "en-fr"
    for i in range(len(lesson.STEPS)):
        assert f"<h2>{i + 1} · " in page
    assert "<img src=x" not in page and "</script><img" not in page
    assert page.count("<section>") == len(lesson.STEPS)
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=\s*[\"']?https?:", page)  # nothing fetched
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_a_handout_click_whose_run_was_cut_short_is_not_lost():
    """The click's callback records the wish; a run interrupted before drawing (another rerun came first) must not
    lose it: the next run, with no click in it, prepares the handout (the one-run button value alone lost it)."""
    at = open_lesson(model="en-fr", text="The dog is tired.")
    assert not at.get("download_button")
    at.session_state["lesson_handout_wanted"] = ("en-fr", "The dog is tired.")  # what the callback leaves behind
    at.run()
    assert not at.exception
    assert at.get("download_button"), "the recorded click was lost"
    assert at.session_state["lesson_handout"][0] == ("en-fr", "The dog is tired.")
    at.session_state["lesson_handout_wanted"] = ("en-fr", "Another sentence.")  # a wish for another text: not this one
    at.run()
    assert at.session_state["lesson_handout"][0] == ("en-fr", "The dog is tired.")


def test_the_payoff_runs_on_the_class_sentence():
    """Issue 34 item 2: step 9 on the trophy sentence draws the trophy pair (its figures and its table), never the
    animal pair's numbers. (A sentence without a partner gets app.coref_view.typed_pair's note, which names it and
    says why: tested on the Coreference page.)"""
    trophy = "The trophy doesn't fit in the suitcase because it is too big."
    at = open_lesson(model="en-fr", text=trophy, step="9")
    assert step_number(at) == 9 and not at.error
    shown = [json.loads(el.proto.spec)["layout"]["title"]["text"] for el in at.get("plotly_chart")]
    grids = [t for t in shown if "antecedent:" in t]
    assert grids == ["Sentence A · antecedent: trophy", "Sentence B · antecedent: suitcase"], shown
    assert set(table(at)["sentence"]) == {trophy, trophy.replace("too big", "too small")}
    text = re.sub(r"\\(.)", r"\1", " ".join(m.value for m in at.markdown))
    assert f"Sentence A: “{trophy}”" in text and "animal" not in text
    assert "Sentence A is yours" in text and "no minimal partner" not in text


def test_a_french_sentence_is_named_as_french_at_the_top_of_the_lesson():
    """QA finding: the lesson said only that the words were unknown."""
    from apptest import open_page, type_sentence
    at = type_sentence(open_page("lesson.py", "en-fr", timeout=240), "Le chat est sur la table.")
    shown = [w.value.replace("\\", "") for w in at.warning]
    assert shown and shown[0].startswith("This looks like French (le, est, sur, la), not English"), shown


def test_every_chart_title_fits_two_lines_and_keeps_its_brackets_whole():
    """QA s58 item 6: on the projector step 3's "Token embedding + positional encoding: …" and both step 7 maps had
    titles of three lines, and step 3's formula broke inside "PE(pos, 2i+1)". The browser sweep opens the Lesson at
    step 1 only, so it never measured them: here every step's figure is built, presentation mode on and off, and each
    title is held to theme.MAX_TITLE_LINES lines of the mode's width, no line ending inside brackets. (Step 8's and
    step 9's titles are fixed strings, checked on their own pages; building them costs seconds.)"""
    from app import theme
    slow = {lesson.output_step, lesson.payoff_step}
    for present, width in ((True, theme.TITLE_CHARS), (False, theme.TITLE_CHARS_PLAIN)):
        c = lesson.Context("en-fr", SEED, present=present)
        titles = [b.layout.title.text for step in lesson.STEPS if step not in slow
                  for kind, b in step(c).blocks if kind == "fig"]
        assert len(titles) >= 15
        for t in titles:
            lines = re.sub(r"<(?!br>)[^>]*>", "", t).split("<br>")
            assert len(lines) <= theme.MAX_TITLE_LINES and all(len(x) <= width for x in lines), (present, t)
            assert all(x.count("(") == x.count(")") for x in lines), (present, t)

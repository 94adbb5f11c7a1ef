"""Every figure README.md quotes about a shipped model or a measurement equals the file it comes from.

:data:`CLAIMS` is the table: a pattern on README's text (whitespace collapsed, fenced code left out) whose groups are
the figures, the file and key the truth lives in, and a function returning those figures written the way README
writes them (rounding included). :func:`test_every_number_in_the_readme_is_checked_or_explained` keeps the table
complete: a number in README's prose outside every claim and every entry of :data:`NOT_MEASURED` fails, so a figure
added later needs a source here (or a reason it has none).

Only JSON, Markdown and Python source are read (``ast``, no import): no model is built, torch is not imported.
"""
from __future__ import annotations

import ast
import json
import math
import re
import struct
from functools import cache
from pathlib import Path
from typing import Callable, NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "assets" / "models"


# ------------------------------------------------------------------ reading the sources
@cache
def readme() -> str:
    """README.md as one line of prose: fenced code blocks dropped, every run of whitespace one space."""
    text = re.sub(r"^```.*?^```[ \t]*$", " ", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.sub(r"\s+", " ", text)


@cache
def config(model: str) -> dict:
    return json.loads((MODELS / model / "config.json").read_text(encoding="utf-8"))


def meta(model: str) -> dict:
    return config(model)["meta"]


@cache
def text(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def card(model: str) -> str:
    return text(f"assets/models/{model}/card.md")


def found(pattern: str, relative: str, group=1) -> str:
    """Group ``group`` of the first match of ``pattern`` in the file ``relative`` (fails naming both if none)."""
    m = re.search(pattern, text(relative), flags=re.S)
    assert m, f"{relative} no longer says /{pattern}/: the README check cannot find its source"
    return m.group(group)


def number(s: str) -> float:
    return float(s.replace(",", ""))


def section(relative: str, title: str) -> tuple[str, str]:
    """``(number, body)`` of the ``## N. …`` section of a doc whose heading contains ``title``."""
    doc = text(relative)
    m = re.search(r"^## (\d+)\. [^\n]*" + re.escape(title) + r"[^\n]*\n(.*?)(?=^## |\Z)", doc, flags=re.M | re.S)
    assert m, f"{relative} has no '## N.' section titled …{title}…"
    return m.group(1), m.group(2)


def table(body: str, header_cell: str) -> dict[str, list[str]]:
    """The first Markdown table in ``body`` whose header row has ``header_cell``: column name → cells (the table ends
    at its first line that is not a row: a later table of as many columns is not read as more of its rows)."""
    lines = body.splitlines()
    start = next(i for i, r in enumerate(lines) if r.startswith("|") and header_cell in r)
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    split = [[c.strip() for c in r.strip().strip("|").split("|")] for r in lines[start:end]]
    header, cells = split[0], [r for r in split[2:] if len(r) == len(split[0])]
    return {h: [r[i] for r in cells] for i, h in enumerate(header)}


def constants(relative: str) -> dict:
    """Module-level assignments of a Python file, read with ``ast`` (tuple unpacking included): the value where it
    is a literal, else its expression node (``STEPS = [f, g]``, ``dict(...)``)."""
    def value(node):
        try:
            return ast.literal_eval(node)
        except ValueError:
            return node

    out = {}
    for node in ast.parse(text(relative)).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = value(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    out.update((t.id, value(v)) for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name))
    return out


def defaults(relative: str, function: str) -> dict:
    """The keyword defaults of a top-level function, read with ``ast``."""
    fn = next(n for n in ast.parse(text(relative)).body if isinstance(n, ast.FunctionDef) and n.name == function)
    args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):] + fn.args.kwonlyargs
    values = fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]
    return {a.arg: ast.literal_eval(v) for a, v in zip(args, values)}


def safetensors_dtypes(model: str) -> set[str]:
    """The dtypes a weights file stores, from its JSON header only (8-byte length, then the header)."""
    with open(MODELS / model / "model.safetensors", "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return {v["dtype"] for k, v in header.items() if k != "__metadata__"}


def one(by_model: dict) -> str:
    """The value README states once for several models ("… each"): the value if they all agree, else every one."""
    values = set(by_model.values())
    return values.pop() if len(values) == 1 else " / ".join(f"{m}: {v}" for m, v in by_model.items())


# ------------------------------------------------------------------ how README writes numbers
def millions(n, digits=1) -> str:
    return f"{n / 1e6:.{digits}f}"


def d1(x) -> str:
    return f"{x:.1f}"


def commas(n) -> str:
    return f"{int(n):,}"


WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


# ------------------------------------------------------------------ the truths
def translator_parameters():
    return (one({m: millions(meta(m)["parameters"]) for m in ("en-fr", "en-de")}),)


def translator_dtype():
    names = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}
    return (one({m: "/".join(sorted(names.get(d, d) for d in safetensors_dtypes(m))) for m in ("en-fr", "en-de")}),)


def human_pairs():
    return tuple(found(r"Splits by document[^:]*: train ([\d,]+) pairs", f"assets/models/en-{lang}/card.md")
                 for lang in ("fr", "de"))


def generated_pairs():
    return (one({m: commas(number(found(r"core\.data\.broad: (\d[\d,]*) generated", f"assets/models/{m}/card.md")))
                 for m in ("en-fr", "en-de")}),)


def lexicon_json():
    lex = json.loads(text("core/data/lexicon.json"))
    return tuple(commas(len(lex[kind])) for kind in ("nouns", "adjectives", "verbs"))


def lexicon_of(model: str):
    def truth():
        m = re.search(r"\((\d[\d,]*) nouns, (\d[\d,]*) adjectives, (\d[\d,]*) verbs", card(model))
        assert m, f"assets/models/{model}/card.md no longer names its lexicon's size"
        return tuple(commas(number(g)) for g in m.groups())
    return truth


def frames():
    return tuple(found(r"training pairs in (\d+) frames over", f"assets/models/{m}/card.md")
                 for m in ("en-fr", "en-de"))


def gpu_minutes():
    """Each translator's first run on the GPU: its own, or for a fine-tuned model the run at the start of its chain of
    ``meta.init_from`` (stopped by that run's ``--max-seconds``)."""
    def gpu_seconds(m):
        init = meta(m).get("init_from")
        if not init:
            return meta(m)["summary"]["seconds"]
        while init.get("init_from"):
            init = init["init_from"]
        return max_seconds(init["command"])
    return (one({m: str(round(gpu_seconds(m) / 60)) for m in ("en-fr", "en-de")}),)


def max_seconds(command: str) -> float:
    return float(re.search(r"--max-seconds (\d+(?:\.\d+)?)", command).group(1))


def fine_tune_minutes():
    """en-fr's CPU fine-tune (its own run); en-de's GPU fine-tune (the run it started from, by its ``--max-seconds``)
    and its own CPU run."""
    fr, de = meta("en-fr"), meta("en-de")
    assert fr["summary"]["device"] == de["summary"]["device"] == "cpu"
    assert fr["init_from"]["model"] == "en-fr" and de["init_from"]["init_from"]["model"] == "en-de"
    return (str(round(fr["summary"]["seconds"] / 60)), str(round(max_seconds(de["init_from"]["command"]) / 60)),
            str(round(de["summary"]["seconds"] / 60)))


def lm_gpu_run():
    """The shipped lm's passes over its training split (steps × batch × window over the card data line's tokens) and
    its training minutes on the GPU (meta.summary)."""
    m = meta("lm")
    assert m["summary"]["device"] == "cuda"
    flag = {k: int(re.search(rf"--{k} (\d+)", m["command"]).group(1)) for k in ("batch-size", "seq-len")}
    tokens = int(re.search(r"split by document\): (\d+) tokens", card("lm")).group(1))
    return str(round(m["step"] * flag["batch-size"] * flag["seq-len"] / tokens)), d1(m["summary"]["seconds"] / 60)


def lm_cpu_recipe():
    """The lm card's CPU recipe (meta.recipes): its ``--max-seconds`` in minutes, on the CPU (no --device cuda)."""
    cpu = [r for r in meta("lm")["recipes"] if r["name"].startswith("CPU")]
    assert len(cpu) == 1 and "cuda" not in cpu[0]["command"]
    return (str(round(max_seconds(cpu[0]["command"]) / 60)),)


def human_test_scores():
    return tuple(d1(meta(m)["heldout"][key])
                 for m in ("en-fr", "en-de") for key in ("real_test_bleu", "real_test_chrf"))


def tiny_translators():
    params = one({m: millions(meta(m)["parameters"], 0) for m in ("en-fr-tiny", "en-de-tiny")})
    words = one({m: str(len(json.loads(text(f"assets/models/{m}/words.json"))["words"]))
                 for m in ("en-fr-tiny", "en-de-tiny")})
    return params, words


def lm_size():
    tok = json.loads(text("assets/models/lm/tokenizer.json"))
    pre = tok.get("pre_tokenizer") or {}
    kind = "byte-level" if pre.get("type") == "ByteLevel" else str(pre.get("type"))
    return millions(meta("lm")["parameters"]), kind, commas(config("lm")["model"]["vocab_size"])


def lm_corpus_mb():
    """The lm card's split table: characters of train + valid + test (what the card's own "MB of prose" sums)."""
    chars = table(card("lm").split("## Corpus", 1)[1], "characters")["characters"]
    return (d1(sum(number(c) for c in chars) / 1e6),)


def lm_perplexity():
    h = meta("lm")["heldout"]
    return d1(h["perplexity"]), d1(h["bigram_perplexity"]), f"{h['perplexity_vs_bigram']:.2f}"


def lm_sources():
    """The lm card's data line: "(core.data.english_large: N sources of …"."""
    return (re.search(r"core\.data\.english_large: (\d+) sources", card("lm")).group(1),)


def lm_heads():
    """The lm card's heads (meta.heads): previous-token and induction scores with their layers, the ablation's cost."""
    h = meta("lm")["heads"]
    prev, ind = h["best_previous_token"], h["best_induction"]
    return (f"{prev['score']:.2f}", str(prev["layer"]), f"{ind['score']:.2f}", str(ind["layer"]),
            d1(h["second_copy_loss_heads_off"] - h["second_copy_loss"]))


def induction_layers():
    """app/training_settings.py's INDUCTION_PRESET: its number of layers, and that it is attention-only."""
    preset = constants("app/training_settings.py")["INDUCTION_PRESET"]
    settings = {k.arg: ast.literal_eval(k.value) for k in preset.keywords}
    return (str(settings["layers"]) if settings.get("attention_only") else "not attention-only",)


def scoreboard_items():
    """The en-fr scoreboards the Coreference page reads (summaries.json, the tour's model): how many sentences."""
    entry = json.loads(text("assets/models/en-fr/summaries.json"))["coref"]
    return (str(entry["n_items"]),)


def lesson_steps():
    steps = constants("app/lesson.py")["STEPS"]
    return (WORDS[len(steps.elts)],)


def bert_corruption():
    d = defaults("core/training/tasks.py", "bert_corrupt")
    pct = lambda x: str(round(100 * x))  # noqa: E731
    return pct(d["rate"]), pct(d["p_mask"]), pct(d["p_random"]), pct(1 - d["p_mask"] - d["p_random"])


def presentation_sizes():
    """The screen the browser test takes the README's presentation screenshots at, and app/theme.py's sizes: the
    page CSS (html font size, h1 in rem) and the chart sizes every figure gets."""
    width = found(r'if path == "attention" and width == (\d+) and present:\s+shoot\(page, f"presentation-',
                  "tests/e2e/test_presentation_browser.py")
    height = found(r'\("light", True, \[\(' + width + r', (\d+),', "tests/e2e/test_presentation_browser.py")
    c = constants("app/theme.py")
    body = number(re.search(r"html \{ font-size: (\d+)px", c["PAGE_CSS"]).group(1))
    h1 = number(re.search(r"h1 \{ font-size: ([\d.]+)rem", c["PAGE_CSS"]).group(1))
    return (width, height, str(round(h1 * body)), str(round(body)), str(c["TITLE"]), str(c["AXIS_TITLE"]),
            str(c["TICK"]))


def install():
    """docs/BENCHMARKS.md's install section: venv size in GB and mean seconds, after and before, and its number."""
    n, body = section("docs/BENCHMARKS.md", "The install")
    t = table(body, "venv on disk")
    rows = dict(zip(t[""], zip(t["seconds"], t["venv on disk"])))
    out = []
    for which in ("after", "before"):
        seconds, disk = rows[which]
        runs = [number(s) for s in seconds.split("/")]
        out += [d1(number(disk.split()[0]) / 1000), str(round(sum(runs) / len(runs)))]
    return (*out, n)


def suite_minutes():
    """docs/measurements/suite-time.md's latest fresh-clone run: its minutes (with the install) and date."""
    rows = re.findall(r"^\| (\d{4}-\d\d-\d\d) \| \w+ \| [\d,]+ passed \| [\d,.]+ \| (\d+):(\d\d) \|$",
                      text("docs/measurements/suite-time.md"), re.M)
    assert rows, "docs/measurements/suite-time.md no longer records a run"
    date, minutes, seconds = rows[-1]
    return str(round(int(minutes) + int(seconds) / 60)), date


def warm_up():
    """docs/BENCHMARKS.md's first-visit section: the warm-up's seconds (prose), the first chart after it (its
    first-chart columns, every pass, new browser and one visitor); and its number."""
    n, body = section("docs/BENCHMARKS.md", "First visit of every page")
    m = re.search(r"The warm-up itself took ([\d.]+) s", body)
    assert m, "docs/BENCHMARKS.md §First visit no longer says how long the warm-up took"
    t = table(body, "first chart, new browser, pass 1")
    charts = [number(v) for k in list(t)[1:4] for v in t[k] if v != "—"]  # the three first-chart columns
    return str(round(number(m.group(1)))), str(math.floor(min(charts))), str(math.ceil(max(charts))), n


def page_to_page():
    """docs/BENCHMARKS.md's first-visit section, its table of pages reached by a sidebar click: the slowest first chart
    of the "now" columns (both passes)."""
    _, body = section("docs/BENCHMARKS.md", "First visit of every page")
    t = table(body, "after a click, now (pass 1)")
    charts = [number(v.strip("*")) for k in list(t)[3:5] for v in t[k] if v.strip("*") != "—"]
    return (f"{max(charts):.2f}",)


def gc_freeze():
    """docs/BENCHMARKS.md's garbage-collector section: the share of the span the not-frozen runs spent in full
    collections (lowest-highest), the smallest ratio of visits a second, frozen over the not-frozen run before it (from
    the JSON the section's command wrote), and the section's number."""
    n, body = section("docs/BENCHMARKS.md", "garbage collector")
    t = table(body, "their time (share of the span)")
    shares = [number(re.search(r"\(([\d.]+) %\)", c).group(1))
              for r, c in zip(t["run"], t["their time (share of the span)"]) if r == "not frozen"]
    out = re.search(r"--out (\S+)", body).group(1)
    runs = json.loads((ROOT / out).read_text())["runs"]
    ratios = [b["visits_per_s"] / a["visits_per_s"] for a, b in zip(runs[::2], runs[1::2])
              if not a["frozen"] and b["frozen"]]
    return f"{min(shares):.1f}", f"{max(shares):.1f}", f"{math.floor(100 * min(ratios)) / 100:.2f}", n


def figure_specs():
    """docs/BENCHMARKS.md's chart-building section: the lowest and highest median wall-time ratio over its pages, from
    the JSON its command wrote, and the section's number."""
    n, body = section("docs/BENCHMARKS.md", "Building a chart")
    out = re.search(r"--out (\S+)", body).group(1)
    ratios = [page["median_wall_s"]["ratio"] for page in json.loads((ROOT / out).read_text())["pages"].values()]
    return f"{min(ratios):.2f}", f"{max(ratios):.2f}", n


def class_of_30():
    n, body = section("docs/RELIABILITY.md", "Many users at once")
    size = re.search(r"^### A class of (\d+)", body, flags=re.M)
    assert size, "docs/RELIABILITY.md §Many users at once has no 'A class of N' run"
    return size.group(1), n


# ------------------------------------------------------------------ the table
class Claim(NamedTuple):
    name: str
    readme: str              # a pattern on readme(): one group per figure
    source: str              # where the truth lives, for the failure message
    truth: Callable[[], tuple]  # the figures, written as README writes them


CLAIMS = [
    Claim("translator-parameters", r"`en-fr`, `en-de`: (\d+\.\d) M parameters each",
          "assets/models/en-{fr,de}/config.json meta.parameters", translator_parameters),
    Claim("translator-dtype", r"M parameters each, weights in (\w+)\)",
          "assets/models/en-{fr,de}/model.safetensors header dtypes", translator_dtype),
    Claim("human-pairs", r"\((\d[\d,]*) / (\d[\d,]*) training pairs, frozen in",
          "assets/models/en-{fr,de}/card.md 'Splits by document: train N pairs'", human_pairs),
    Claim("generated-pairs", r"— and (\d[\d,]*) generated sentence pairs over a lexicon",
          "assets/models/en-{fr,de}/card.md 'core.data.broad: N generated'", generated_pairs),
    Claim("lexicon", r"\((\d[\d,]*) nouns, (\d[\d,]*) adjectives, (\d[\d,]*) verbs, names and numbers",
          "core/data/lexicon.json list lengths", lexicon_json),
    Claim("lexicon-en-fr", r"\((\d[\d,]*) nouns, (\d[\d,]*) adjectives, (\d[\d,]*) verbs, names and numbers",
          "assets/models/en-fr/card.md data line", lexicon_of("en-fr")),
    Claim("lexicon-en-de", r"\((\d[\d,]*) nouns, (\d[\d,]*) adjectives, (\d[\d,]*) verbs, names and numbers",
          "assets/models/en-de/card.md data line", lexicon_of("en-de")),
    Claim("sentence-shapes", r"in (\d+) sentence shapes for en-fr, (\d+) for en-de",
          "assets/models/en-{fr,de}/card.md 'in N frames over'", frames),
    Claim("gpu-minutes", r"They trained for (\d+) minutes on one GPU",
          "assets/models/en-{fr,de}/config.json meta.summary.seconds / 60 (fine-tuned: the first meta.init_from's --max-seconds)",
          gpu_minutes),
    Claim("fine-tune-minutes", r"en-fr for (\d+) more minutes on a CPU, en-de for (\d+) more minutes on a GPU and (\d+) on a CPU",
          "assets/models/en-{fr,de}/config.json meta.summary.seconds / 60; en-de's meta.init_from --max-seconds / 60",
          fine_tune_minutes),
    Claim("human-test-scores", r"en-fr scores BLEU (\d+\.\d) / chrF (\d+\.\d) and en-de (\d+\.\d) / (\d+\.\d)",
          "assets/models/en-{fr,de}/config.json meta.heldout.real_test_bleu / real_test_chrf", human_test_scores),
    Claim("tiny-translators", r"The (\d+) M translators of the original (\d+)-word grammar",
          "assets/models/en-{fr,de}-tiny/config.json meta.parameters and words.json 'words'", tiny_translators),
    Claim("lm-size", r"The GPT-style `lm` \((\d+\.\d) M parameters, ([\w-]+) BPE of (\d[\d,]*)\)",
          "assets/models/lm/config.json meta.parameters, model.vocab_size; tokenizer.json pre_tokenizer", lm_size),
    Claim("lm-corpus", r"read (\d+\.\d) MB of real English prose",
          "assets/models/lm/card.md split table, characters summed", lm_corpus_mb),
    Claim("lm-gpu-run", r"(\d+) times over in (\d+\.\d) minutes on one GPU",
          "assets/models/lm/config.json meta.step, meta.summary.seconds; command --batch-size, --seq-len; card tokens",
          lm_gpu_run),
    Claim("lm-cpu-recipe", r"the CPU recipe: two cores, (\d+) minutes",
          "assets/models/lm/config.json meta.recipes (CPU) --max-seconds", lm_cpu_recipe),
    Claim("lm-perplexity", r"test perplexity (\d+\.\d) against (\d+\.\d) for a bigram model on the same tokens "
          r"\((\d\.\d\d)×\)", "assets/models/lm/config.json meta.heldout", lm_perplexity),
    Claim("lm-sources", r"English prose from (\d+) sources in Debian packages",
          "assets/models/lm/card.md data line", lm_sources),
    Claim("lm-heads", r"a previous-token head \(score (\d\.\d\d), layer (\d+)\) and, after it, an induction head "
          r"\(score (\d\.\d\d), layer (\d+)\) whose removal costs the second copy of repeated random tokens "
          r"(\d+\.\d) nats", "assets/models/lm/config.json meta.heads", lm_heads),
    Claim("induction-preset", r"the induction preset: a (\d+)-layer attention-only model",
          "app/training_settings.py INDUCTION_PRESET layers, attention_only", induction_layers),
    Claim("scoreboard", r"a scoreboard over (\d+) (?:probe )?sentences",
          "assets/models/en-fr/summaries.json coref.n_items", scoreboard_items),
    Claim("lesson-steps", r"the whole transformer in (\w+) steps", "app/lesson.py STEPS", lesson_steps),
    Claim("bert-corruption", r"BERT's (\d+) % / (\d+)-(\d+)-(\d+) corruption",
          "core/training/tasks.py bert_corrupt defaults", bert_corruption),
    Claim("presentation-sizes", r"here at (\d+)×(\d+): page title (\d+) px, body (\d+) px, chart titles (\d+) px, "
          r"axis titles (\d+) px, tick labels (\d+) px",
          "tests/e2e/test_presentation_browser.py screenshot sweep; app/theme.py PAGE_CSS, TITLE, AXIS_TITLE, TICK",
          presentation_sizes),
    Claim("install", r"the venv is (\d+\.\d) GB, ≈ (\d+) s to install here \(measured before the `-e \.` step; "
          r"(\d+\.\d) GB and ≈ (\d+) s before the trim: `bash bench/bench_install\.sh`, docs/BENCHMARKS\.md §(\d+)\)",
          "docs/BENCHMARKS.md, section 'The install' (table: mean seconds, MB / 1000)", install),
    Claim("suite-minutes", r"The suite took (\d+) minutes on 2 cores on (\d{4}-\d\d-\d\d)",
          "docs/measurements/suite-time.md, the latest fresh-clone run", suite_minutes),
    Claim("warm-up", r"\((\d+) s after start here; a new visitor's first chart then\s+appears after (\d+)–(\d+) s, most "
          r"of it Streamlit's and Plotly's code starting in the browser: docs/BENCHMARKS\.md §(\d+);",
          "docs/BENCHMARKS.md, section 'First visit of every page'", warm_up),
    Claim("page-to-page", r"every page's first chart appears\s+within ([\d.]+) s of the click",
          "docs/BENCHMARKS.md, section 'First visit of every page', the sidebar-click table", page_to_page),
    Claim("gc-freeze", r"they had taken ([\d.]+)-([\d.]+) % of its time, and the same visitors got ([\d.]+)× the"
          r"\s+visits done a second \(docs/BENCHMARKS\.md §(\d+)\)", "docs/BENCHMARKS.md, section 'garbage collector'",
          gc_freeze),
    Claim("figure-specs", r"a page renders ([\d.]+)-([\d.]+)× faster for it \(docs/BENCHMARKS\.md §(\d+)\)",
          "docs/BENCHMARKS.md, section 'Building a chart', and the JSON of its command", figure_specs),
    Claim("class-of-30", r"the (\d+)-student run is in docs/RELIABILITY\.md §(\d+)",
          "docs/RELIABILITY.md, section 'Many users at once'", class_of_30),
]

# Numbers in README's prose that are no measurement of ours, with the reason (a pattern each, on readme()).
NOT_MEASURED = {
    r"Python 3\.11": "a requirement",
    r"≈ 3 GB of CUDA libraries": "PyPI's default torch wheel, not ours",
    r"2 CPU cores": "the machine the preset's time refers to (no figure stated)",
    r"Olsson et al\. 2022": "a citation",
}


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_readme_figure_equals_its_source(claim):
    m = re.search(claim.readme, readme())
    assert m, (f"README.md no longer has /{claim.readme}/ ({claim.name}): reword the claim in "
               f"tests/core/test_readme_numbers.py too")
    truth = tuple(claim.truth())
    assert m.groups() == truth, (f"README.md says \"{m.group(0)}\" {m.groups()}, but {claim.source} gives {truth}: "
                                 "fix the README (or re-measure)")


def test_every_number_in_the_readme_is_checked_or_explained():
    prose = readme()
    covered = [m.span() for c in CLAIMS for m in re.finditer(c.readme, prose)]
    covered += [m.span() for p in NOT_MEASURED for m in re.finditer(p, prose)]
    covered += [m.span() for m in re.finditer(r"`[^`]*`|\]\([^)]*\)", prose)]  # code, commands, link targets
    loose = [prose[max(0, m.start() - 40):m.end() + 20] for m in re.finditer(r"(?<![\w-])\d[\d,.]*", prose)
             if not any(a <= m.start() < b for a, b in covered)]
    assert not loose, ("README.md states numbers that no claim of tests/core/test_readme_numbers.py checks against "
                       f"a source: {loose} — add a Claim (or a NOT_MEASURED reason)")


def test_each_claim_matches_one_place_only():
    """A pattern that matched twice could check one copy of a figure and let the other drift."""
    prose = readme()
    twice = [c.name for c in CLAIMS if len(re.findall(c.readme, prose)) > 1]
    assert not twice, twice

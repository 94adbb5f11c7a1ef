"""The shell every page shares: model picker, sentence, presets, presentation mode, URL state, caches.

State lives in ``st.session_state`` and is mirrored into ``st.query_params`` so a teacher can
share a link that reopens exactly the same view. Everything read from the URL is validated.
"""
from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st

from app import coverage_view, nav, rooms, theme
from app.cache import bounded, nbytes
from app.guard import public
from app.text import md
from core.config import ModelConfig
from core.hooks import as_ablation
from core.io import budget, checkpoint, jsonio, registry
from core.probes import coref
from core.inference import coverage
from core.inference.runner import Run, run

# the classroom's examples for the broad translators: the Winograd pairs first (coref.CLASSROOM_PAIRS), then two
# sentences of other shapes, then everyday sentences outside the grammar that en-fr and en-de translate right and do
# not flag as doubtful (each translation checked by reading; tests/core/test_coref.py holds them word for word)
EVERYDAY = ["The book is on the table.", "I have two brothers.", "Where is the station?", "I don't understand.",
            "The door is open.", "The water is cold.", "We live in a small town.", "The boy has a dog.",
            "I like apples.", "Click the button to save the document.", "The city is beautiful.",
            "The window is closed."]
_BROAD = [s for pair in coref.CLASSROOM_PAIRS for s in pair] + ["My sister bought a new car because it was cheap.",
                                                                "The cat saw the bowl. It was empty."] + EVERYDAY
PRESETS = {
    "en-fr": _BROAD, "en-de": _BROAD,
    "en-fr-tiny": ["The animal didn't cross the street because it was too tired.",
                   "The animal didn't cross the street because it was too wide.",
                   "I am happy.", "The dog is tired."],
    "en-de-tiny": ["I am happy.", "The animal didn't cross the street because it was too tired.",
                   "The animal didn't cross the street because it was too wide."],
    "lm": ["The function returns a list of the values", "The animal didn't cross the street because it",
           "Python is a programming language that"],
    "lm-tiny": ["The dog was hungry.", "The animal didn't cross the street because it", "The cat"],
    "mlm": ["The [MASK] was muddy. A dog came to the garden.",
            "The animal didn't cross the street because [MASK] was too wide.",
            "A bird and a horse met next to the wall. The [MASK] was ready, but the horse was sad."],
    "copy": ["3 1 4 1 5 9 2 6"], "reverse": ["3 1 4 1 5 9 2 6", "a b c d e f"],
    "minilm": ["The animal didn't cross the street because it was too tired.",
               "The animal didn't cross the street because it was too wide."],
}
DEFAULT_TEXT = PRESETS["en-fr"][0]
MAX_TEXT = 2000  # characters read from the URL or the text box
URL_INT = re.compile(r"[0-9]{1,6}")  # a layer, head or step in a link


@dataclass
class View:
    name: str
    ck: checkpoint.Checkpoint
    text: str
    tgt: str | None
    present: bool
    dark: bool

    @property
    def kind(self) -> str:
        return self.ck.model.cfg.kind


# Models loaded for the whole server. The bundled and pretrained ones stay loaded (their number is what ships: ≈ 190 MB
# of weights); a user's model is kept while it is used and goes, least recently used first, when the user models
# loaded together would pass MODEL_CACHE_BYTES. Pages list models from their config (model_info) and load only the
# one(s) they show.
MODEL_CACHE_BYTES = int(os.environ.get("ATTENTION_LAB_MODEL_CACHE_BYTES", 256 << 20))
_models_lock = threading.Lock()
_models: OrderedDict = OrderedDict()  # name -> (checkpoint, bytes, pinned), least recently used first
_loading: dict[str, threading.Lock] = {}  # one lock per name: two sessions never load the same model twice


def _pinned(name: str) -> bool:
    return name in registry.PRETRAINED or name in registry.bundled()


def _evict() -> None:
    """Drop least recently used user models while they hold more than :data:`MODEL_CACHE_BYTES` (under the lock)."""
    users = [(n, size) for n, (_, size, pinned) in _models.items() if not pinned]
    total = sum(size for _, size in users)
    for n, size in users:
        if total <= MODEL_CACHE_BYTES:
            break
        del _models[n]
        total -= size


def load_model(name: str) -> checkpoint.Checkpoint:
    """One copy per model for the whole server; pages only read it. It reads at most the positions whose largest
    trace and exports fit the memory budget of one request (core.io.budget)."""
    with _models_lock:
        hit = _models.get(name)
        if hit is not None:
            _models.move_to_end(name)
            return hit[0]
        lock = _loading.setdefault(name, threading.Lock())
    with lock:
        with _models_lock:
            hit = _models.get(name)
        if hit is not None:
            return hit[0]
        try:
            with st.spinner("Loading model…"):
                try:
                    ck = registry.load(name, allow_path=False)
                except (ValueError, OSError) as e:  # what describe cannot see (non-finite weights): listed as broken
                    with _models_lock:
                        _infos[_signature(name)] = public(" ".join(str(e).split()) or type(e).__name__)
                    raise
            budget.limit_positions(ck.model)
            with _models_lock:
                _models[name] = (ck, nbytes(ck.model), _pinned(name))
                _evict()
        finally:
            with _models_lock:
                _loading.pop(name, None)
        return ck


def _forget_model(name: str | None = None) -> None:
    """Forget model ``name`` (every model: None), e.g. when its folder changed; the next use loads it again."""
    with _models_lock:
        if name is None:
            _models.clear()
            _infos.clear()
        else:
            _models.pop(name, None)
            for key in [k for k in _infos if k[0] == name]:
                del _infos[key]


load_model.clear = _forget_model


def forget_model(name: str) -> None:
    """Everything the server keeps about model ``name`` (the loaded model, its listing, cached runs and results),
    when its folder was saved anew or deleted: a new model may take the name."""
    from app import cache
    _forget_model(name)
    cache.forget(name)
    st.cache_data.clear()  # the few st.cache_data results keyed by a model name (variants page); small, recomputed


def loaded_models() -> list[str]:
    """The names of the models loaded now, least recently used first."""
    with _models_lock:
        return list(_models)


@dataclass(frozen=True)
class ModelInfo:
    """What a model list needs to know about a model, read from its folder without loading its weights."""
    name: str
    cfg: ModelConfig
    meta: dict


_infos: OrderedDict = OrderedDict()  # (name, files' size and mtime) -> ModelInfo, or the error message


def _signature(name: str) -> tuple:
    try:
        folder = registry.resolve(name, allow_path=False)
    except ValueError:
        return (name, None)
    stats = []
    for f in (checkpoint.CONFIG, checkpoint.TOKENIZER, checkpoint.WEIGHTS):
        try:
            st_ = (folder / f).stat()
            stats.append((st_.st_size, st_.st_mtime_ns))
        except OSError:
            stats.append(None)
    return (name, str(folder), tuple(stats))


def model_info(name: str) -> ModelInfo:
    """The config and meta of model ``name``, checked as a load checks them (core.io.checkpoint.describe) but without
    loading its weights; raises ValueError (the reason) for a model that cannot be loaded. Kept per file version."""
    if name in registry.PRETRAINED:  # a package, not a folder: the one pretrained model is kept loaded anyway
        ck = load_model(name)
        return ModelInfo(name, ck.model.cfg, ck.meta)
    key = _signature(name)
    with _models_lock:
        hit = _infos.get(key)
        if hit is not None:
            _infos.move_to_end(key)
    if hit is None:
        try:
            cfg, meta = checkpoint.describe(registry.resolve(name, allow_path=False))
            hit = ModelInfo(name, cfg, meta)
        except (ValueError, OSError) as e:  # CheckpointError is a ValueError
            hit = public(" ".join(str(e).split()) or type(e).__name__)
        with _models_lock:
            _infos[key] = hit
            while len(_infos) > 512:
                _infos.popitem(last=False)
    if isinstance(hit, str):
        raise ValueError(hit)
    return hit


@bounded
def traced(name: str, text: str, tgt: str | None, ablate: tuple = (), layers: tuple | None = None) -> Run:
    ck = load_model(name)
    return run(ck, text, tgt, ablate=as_ablation(ablate) or None, layers=layers)


@st.cache_data(show_spinner=False)
def known_summary() -> str:
    """One sentence on what the bundled translators know, read from their own training vocabularies."""
    from core.data import broad
    parts = []
    for name in ("en-fr", "en-de"):
        if name in registry.bundled():
            words = checkpoint.read_words(registry.BUNDLED / name) or ()
            parts.append(f"{name} {len(words):,}")
    if not parts:
        return ""
    lex = broad.lexicon()
    return (f"What the default translators know: the English words of their training text ({', '.join(parts)} "
            "words): human translations (software help, a fantasy game's dialogue, the Debian handbook, children's "
            f"picture descriptions) and generated sentences over {len(lex.nouns)} dictionary nouns, "
            f"{len(lex.adjectives)} adjectives and {len(lex.verbs)} verbs in {len(broad.FRAMES)} shapes. Every page "
            "names the words of your sentence a model never saw and marks a translation it is unsure of.")


def load_error(name: str) -> str | None:
    """Why model ``name`` cannot be loaded, without server paths (read from its folder: :func:`model_info`); None
    when it can."""
    try:
        model_info(name)
    except Exception as e:  # any broken model (truncated weights, a config out of range, ...) is this model's problem
        return public(" ".join(str(e).split()) or type(e).__name__)
    return None


def usable_models(keep=None) -> list[str]:
    """The listed models that can be loaded (and that ``keep(ModelInfo)`` accepts: its ``cfg`` and ``meta``), decided
    from their folders without loading them. A page offering several models takes them from here, so one broken
    model is skipped (and named by :func:`note_broken`), never a traceback for everyone, and only the model(s) the
    page shows are loaded."""
    return [n for n in models() if load_error(n) is None and (keep is None or keep(model_info(n)))]


def model_load_error(name: str) -> str | None:
    """Why model ``name`` cannot be loaded (loading it: a page is about to show it), or None once it is loaded."""
    try:
        load_model(name)
    except (ValueError, OSError) as e:
        return public(" ".join(str(e).split()) or type(e).__name__)
    return None


def shown_model(name: str) -> checkpoint.Checkpoint:
    """The model a page shows, loaded; the page stops after a plain message if it cannot be (e.g. non-finite weights,
    which only a load finds)."""
    try:
        return load_model(name)
    except (ValueError, OSError) as e:
        st.error(f"Model {md(repr(name))} cannot be loaded: {md(public(str(e)))}")
        st.stop()


def note_broken() -> None:
    """One plain-text line (nothing in it is interpreted) naming the listed models that cannot be loaded, and why."""
    broken = [(n, why) for n in models() if (why := load_error(n))]
    if broken:
        st.text("Not offered here, cannot be loaded: " + "; ".join(f"{n} ({why[:160]})" for n, why in broken))


ORDER = ["en-fr", "en-de", "lm", "mlm", "minilm", "en-fr-tiny", "en-de-tiny", "lm-tiny", "reverse", "copy"]


OPENED_KEY = "opened_models"  # session_state: the user models this browser session opened by name (a link)


OWNER_KEY = "owner_token"  # session_state: this browser's owner token (app.rooms), from its cookie or new


def browser_token() -> str:
    """This browser's owner token (app.rooms): its cookie's when it sent a valid one, else a new one for this session,
    which :func:`remember_browser` writes into the cookie."""
    token = st.session_state.get(OWNER_KEY)
    if token is None:
        try:
            sent = st.context.cookies.get(rooms.OWNER_COOKIE)
        except Exception:  # no browser request (AppTest)
            sent = None
        token = sent if rooms.valid_token(sent) else rooms.new_token()
        st.session_state[OWNER_KEY] = token
        st.session_state["owner_cookie_sent"] = token == sent
    return token


def remember_browser() -> None:
    """Keep this browser's owner token in a cookie (once per session, where it sent none), so that the runs it trains
    stay its own after a reload or in a new tab (app.rooms). Call it last on a page: its element is drawn on the
    session's first run only, and every element after it would land one place off on the next run (each widget
    shown twice until that run ends)."""
    token = browser_token()
    if not st.session_state.get("owner_cookie_sent"):
        cookie = (f"{rooms.OWNER_COOKIE}={token}; path=/; max-age={rooms.OWNER_COOKIE_DAYS * 86400}; "
                  "SameSite=Strict")
        st.html(f"<script>document.cookie = {jsonio.dumps(cookie)};</script>",  # trusted: ours; the token is [A-Za-z0-9_-]
                unsafe_allow_javascript=True)
        st.session_state["owner_cookie_sent"] = True


def owned_models() -> list[str]:
    """The user models this browser may share and delete: those this session trained, then those saved under its
    owner token in an earlier session (a reload, another tab)."""
    mine = list(st.session_state.get(rooms.OWNED_KEY, ()))
    return mine + [n for n in rooms.owned_by(browser_token()) if n not in mine]


def models() -> list[str]:
    """The models this browser session may pick (app.rooms: bundled, shared, its own, those it opened by link), the
    headline ones first. A ``?model=`` link counts as opened, so a shared link opens a private run by its name, and
    the model shown stays listed if its owner makes it private meanwhile."""
    opened = st.session_state.setdefault(OPENED_KEY, set())
    link = st.query_params.get("model")
    if link and registry.valid_name(link):
        opened.add(link)
    names = rooms.visible_models(owned_models(), opened)
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n not in registry.bundled(), n))


def _model_changed():
    """The sentence stays when the new model can read it (a teacher compares models on the classic sentence); an
    example sentence of another model that it cannot read — words it never saw, or a [MASK] for a model that fills
    none — gives way to the new model's first example. A sentence the user typed always stays."""
    text, name = st.session_state.get("text"), st.session_state["model"]
    examples = {s for group in PRESETS.values() for s in group}
    if text not in examples or text in PRESETS.get(name, ()):
        return
    try:
        ck = load_model(name)
        unreadable = bool((coverage.for_checkpoint(ck, text) or {}).get("unknown_words")) or (
            "[MASK]" in text and ck.meta.get("task") != "mlm")
    except Exception:  # the page says why the model cannot be used; give it its own example meanwhile
        unreadable = True
    if unreadable:
        st.session_state["text"] = PRESETS.get(name, [DEFAULT_TEXT])[0]
        st.session_state["tgt"] = ""


def _from_url(key: str, allowed=None, default=None):
    value = st.query_params.get(key)
    if value is None:
        return default
    if allowed is not None and value not in allowed:
        st.session_state.setdefault("_url_errors", []).append(f"Ignored URL parameter {key}: {value[:40]!r} is not valid.")
        return default
    return value


def _init_from_url(names: list[str]) -> None:
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    st.session_state["model"] = _from_url("model", names, names[0] if names else None)
    text = _from_url("text", default=None)
    if text is not None and len(text) > MAX_TEXT:
        st.session_state.setdefault("_url_errors", []).append(
            f"The sentence in the link was {len(text)} characters; it was cut to {MAX_TEXT}.")
        text = text[:MAX_TEXT]
    model = st.session_state["model"]
    st.session_state["text"] = text if text is not None else PRESETS.get(model, [DEFAULT_TEXT])[0]
    st.session_state["tgt"] = (_from_url("tgt", default="") or "")[:MAX_TEXT]
    st.session_state["present"] = _from_url("present", ["0", "1"], "0") == "1"
    st.session_state["theme"] = _from_url("theme", ["light", "dark"], None)  # None: the browser's own setting


def text_box(label: str, value: str = "", key: str | None = None, limit: int = MAX_TEXT, area: bool = False,
             where=None, **kw) -> str:
    """``st.text_input`` (``area``: ``st.text_area``) in ``where`` (default: the page), holding at most ``limit``
    characters. ``max_chars`` bounds the box in the browser *and* on the server (Streamlit cuts a longer value a client
    writes to the websocket itself): boxes without it took a 10 MB paste (25 s and +700 MB while every other visitor
    waited). Every free-text box of the app is one of these (tests/app/test_text_limits.py)."""
    widget = (where or st).text_area if area else (where or st).text_input
    return widget(label, value, key=key, max_chars=limit, **kw)


def html_frame(document: str, height: int) -> None:
    """Show an HTML document in a sandboxed frame (``st.iframe``), without keeping it in memory afterwards.

    ``st.iframe`` first asks ``urllib.parse.urlparse`` whether its argument is a URL, and Python's ``urlsplit``
    remembers its last 128 distinct arguments and results (``functools.lru_cache``): every bertviz document (8-16 MB
    for a 2,000-character sentence) stayed alive two to three times over, ≈ 45 MB per new sentence, up to 128
    sentences (≈ 5 GB), whatever the run cache's budget (measured with tracemalloc). The cache is
    emptied right after; it only spares re-parsing URLs."""
    import urllib.parse
    st.iframe(document, height=height)
    urllib.parse.urlsplit.cache_clear()


def url_int(key: str, upper: int, default: int = 0, lower: int = 0) -> int:
    """An integer widget default from the URL, validated against ``lower .. upper-1``."""
    raw = st.query_params.get(key)
    if raw is None:
        return default
    # ASCII digits only, at most 6 of them: str.isdigit() accepts '²' (which int() refuses) and any length (which
    # int() refuses past 4,300 digits)
    if URL_INT.fullmatch(raw) and lower <= int(raw) < upper:
        return int(raw)
    st.warning(f"The link asked for {key} {md(repr(raw[:20]))}, which does not exist here ({lower}–{upper - 1}); "
               f"showing {default}.")
    return default


def _view_params() -> dict:
    """The shared part of a view (model, sentence, target, presentation mode) as URL parameters."""
    params = {"model": st.session_state.get("model"), "text": st.session_state.get("text")}
    if st.session_state.get("tgt"):
        params["tgt"] = st.session_state["tgt"]
    if st.session_state.get("present"):
        params["present"] = "1"
    if st.session_state.get("theme"):
        params["theme"] = st.session_state["theme"]
    return {k: v for k, v in params.items() if v is not None}


def sync_url(**extra) -> None:
    """Mirror the current view into the URL: the shared part plus this page's own ``extra`` (layer, head, ...),
    dropping parameters of other pages."""
    params = {**_view_params(), **{k: str(v) for k, v in extra.items() if v is not None}}
    if {k: st.query_params.get(k) for k in st.query_params} != params:
        st.query_params.from_dict(params)


def _sync_shared_url(page: str | None = None) -> None:
    """Every page keeps model and sentence in its link (Streamlit clears the URL on a page switch); the page's
    own parameters, still to be read by the page, are left alone. ``page``: the URL path of the page about to run;
    on a switch from another page, the parameters that page owned and this one does not (app.nav.PAGE_PARAMS: the
    Attention page's kind, layer, head on the Coreference page) leave the link, kept for the session: back on that
    page they return (the layer and head picked there before)."""
    last = st.session_state.get("_url_page")
    if page is not None:
        if last is not None and last != page:
            kept = st.session_state.setdefault("_page_params", {})
            kept[last] = {k: st.query_params[k] for k in nav.PAGE_PARAMS.get(last, ()) if k in st.query_params}
            for key in set(nav.PAGE_PARAMS.get(last, ())) - set(nav.PAGE_PARAMS.get(page, ())):
                if key in st.query_params:
                    del st.query_params[key]
            for key, value in kept.get(page, {}).items():
                if key not in st.query_params:
                    st.query_params[key] = value
        st.session_state["_url_page"] = page
    shared = _view_params()
    for key in ("tgt", "present", "theme"):
        if key not in shared and key in st.query_params:
            del st.query_params[key]
    for key, value in shared.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value


def _use_preset():
    choice = st.session_state.get("preset")
    if choice and choice != "—":
        st.session_state["text"] = choice
        st.session_state["tgt"] = ""


def _typed():
    st.session_state["text"] = st.session_state.get("sentence", "")


def sentence_box(view: View) -> None:
    """The class's sentence, in the main area where the eye is (presentation mode hides the sidebar): one box and the
    model's examples beside it, above the page's first chart. The sentence itself lives in ``session_state["text"]``
    (not a widget's key), so it survives pages that draw no box and is the same on every page of the browser
    session; the URL carries it. In presentation mode the box is one line high."""
    st.session_state["sentence"] = st.session_state.get("text", "")  # the box shows the shared sentence
    box, examples = st.columns([4, 1], vertical_alignment="bottom")
    if view.present:  # one line and no label rows on a projector, so the page's first chart fits the first screen
        box.text_input("Sentence", key="sentence", max_chars=MAX_TEXT, on_change=_typed,
                       label_visibility="collapsed", placeholder="Type a sentence")
    else:
        box.text_area("Sentence", key="sentence", max_chars=MAX_TEXT, height=68, on_change=_typed)
    examples.selectbox("Examples", ["—"] + PRESETS.get(view.name, PRESETS["en-fr"]), key="preset",
                       on_change=_use_preset, label_visibility="collapsed" if view.present else "visible",
                       format_func=lambda s: "Examples…" if view.present and s == "—" else s)


def _shown_theme() -> str | None:
    """The theme the browser shows ("light" / "dark"), None where it is not known (AppTest)."""
    try:
        return st.context.theme.type
    except Exception:  # no theme information
        return None


def _wanted_theme() -> str:
    """The theme asked for (the toggle or ``?theme=``), else the one the browser shows."""
    return st.session_state.get("theme") or _shown_theme() or "light"


def _theme_changed():
    st.session_state["theme"] = "dark" if st.session_state.get("dark_theme") else "light"


def _apply_theme(present: bool, dark: bool) -> None:
    """Page CSS (projector sizes, caption contrast), the sidebar closed in presentation mode, and a reload into the
    theme asked for when the browser shows the other one. Streamlit switches themes only when a page loads
    (``embed_options``), so the reload carries the whole view in its link; it happens once, because the link it
    loads already asks for that theme."""
    st.markdown(theme.page_css(present, dark), unsafe_allow_html=True)  # md: trusted (our CSS)
    if present != st.session_state.get("_sidebar_present"):  # only on a change: the user may open it again
        st.session_state["_sidebar_present"] = present
        st.set_page_config(initial_sidebar_state="collapsed" if present else "auto")
    wanted, shown = st.session_state.get("theme"), _shown_theme()
    if wanted and shown and wanted != shown and st.query_params.get("embed_options") != f"{wanted}_theme":
        st.html(theme.switch_script(wanted), unsafe_allow_javascript=True)  # trusted: ours, no user text


def model_device(model) -> str:
    """The device the model's parameters are on (``cpu``, ``cuda:0``, ...)."""
    param = next(model.parameters(), None)
    return str(param.device) if param is not None else "cpu"


def sidebar(page: str | None = None) -> View | None:
    """Draw the shared sidebar; return the current view, or None when no model can be loaded. ``page``: the URL path
    of the page about to run (its link keeps only its own parameters: :func:`_sync_shared_url`)."""
    names = models()
    _init_from_url(names)
    for msg in st.session_state.pop("_url_errors", []):
        st.warning(md(msg))
    if not names:
        st.error("No models found under assets/models/. Train one with `python -m core.train` (see README).")
        return None
    with st.sidebar:
        st.selectbox("Model", names, key="model", on_change=_model_changed, help="Bundled models, then models you trained on the Training page.")
        name = st.session_state["model"]
        try:
            ck = load_model(name)
        except (ValueError, OSError) as e:
            st.error(f"Model {md(repr(name))} cannot be loaded: {md(public(str(e)))}")  # no server path
            return None
        if ck.model.cfg.kind == "encoder-decoder":
            st.text_input("Target (optional)", key="tgt", max_chars=MAX_TEXT,
                          help="Leave empty to use the model's own translation.")
        st.toggle("Presentation mode", key="present", help="Large type and a high-contrast scale for projectors; "
                  "the sidebar starts closed (open it with the arrow at the top left).")
        st.session_state.setdefault("dark_theme", _wanted_theme() == "dark")
        st.toggle("Dark theme", key="dark_theme", on_change=_theme_changed,
                  help="Light text on a dark background (the page reloads; `?theme=dark` in a link does the same).")
        cfg, device = ck.model.cfg, model_device(ck.model)
        st.caption(f"{cfg.kind} · {cfg.n_layers('encoder')}+{cfg.n_layers('decoder')} layers · {cfg.n_heads} heads · "
                   f"d_model {cfg.d_model} · {ck.model.num_parameters():,} parameters · device {device}")
    _sync_shared_url(page)
    present = bool(st.session_state.get("present"))
    dark = _shown_theme() == "dark"
    _apply_theme(present, dark)
    tgt = st.session_state.get("tgt") or None
    return View(name, ck, st.session_state.get("text", ""), tgt if ck.model.cfg.kind == "encoder-decoder" else None,
                present, dark)


def page_view(sentence: bool = True) -> View:
    """The sidebar's model and the shared sentence, as every page starts (``sentence``: the page reads it, so its
    box is drawn here, under the page's title); the page stops here when there is no model."""
    view = st.session_state.get("view")
    if view is None:
        st.stop()
    if sentence:
        sentence_box(view)
    return view


def page_run(**kw) -> tuple[View, Run]:
    """:func:`page_view` and the traced run of its sentence; the page stops after a clear message when the sentence
    cannot be run."""
    view = page_view()
    res = current_run(view, **kw)
    if res is None:
        st.stop()
    return view, res


def current_run(view: View, **kw) -> Run | None:
    """The traced run of the current sentence, with a clear message instead of a traceback."""
    try:
        result = traced(view.name, view.text, view.tgt, **kw)
    except ValueError as e:
        st.info(md(e))
        return None
    coverage_view.notices(result.notices)  # unknown words named; shown as text
    return result

"""A visitor with no browser: one Streamlit session spoken in Streamlit's own websocket protocol.

Each client is what a browser tab is to the server: one websocket on ``/_stcore/stream``, one session, the same
messages a page sends — a rerun with a shared link's query string, the widget states after a click ("Next ▶"
pressed, a new text in the Sentence box), a page switch. The server does all the work it does for a browser (the
whole script, every chart serialised and sent); what is not done is the browser drawing it.

Two users: ``app/serve.py`` visits every page once when a server starts (so the first student finds it warm), and
the load test's scripted students (``bench/load_test.py --scripted N``; thirty Chromium processes do not fit beside
the app on 2 cores, docs/RELIABILITY.md). Each action is timed from sending its message to (a) the first chart
message of the run and (b) the end of the run ("script finished"); an exception element in the run, a run that does
not finish, or a dropped connection is a failed render.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlparse

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

DONE = ForwardMsg.FINISHED_SUCCESSFULLY


def _choice(proto) -> dict | None:
    if proto.set_value:
        return {"string_value": proto.raw_value}
    return {"string_value": proto.options[proto.default]} if 0 <= proto.default < len(proto.options) else None


# the widgets the classroom walk's pages show, and the state a page sends for each (the value the script set, else
# the widget's default); buttons send only a trigger, when clicked
WIDGETS = {
    "text_area": lambda p: {"string_value": p.value if p.set_value else p.default},
    "text_input": lambda p: {"string_value": p.value if p.set_value else p.default},
    "checkbox": lambda p: {"bool_value": p.value if p.set_value else p.default},
    "selectbox": _choice,
    "radio": _choice,
    "number_input": lambda p: {"double_value": p.value if p.set_value else p.default},
    "slider": lambda p: {"double_array_value": {"data": list(p.value if p.set_value else p.default)}},
    "button": lambda p: None,
}


@dataclass
class Run:
    """What one action's script run sent back."""
    chart_s: float | None  # the first chart of the run
    done_s: float  # script finished
    charts: int
    exceptions: list[str]
    widgets: dict[str, str]  # label -> widget id, for the next action


@dataclass
class Client:
    """One websocket session, as a browser tab holds it. ``cookie`` pins it to a replica behind nginx."""
    base: str
    cookie: str
    timeout_s: float = 120
    ws: object = None
    widgets: dict[str, str] = field(default_factory=dict)  # label -> id, of the last run's widgets
    states: dict[str, dict] = field(default_factory=dict)  # id -> the WidgetState fields the page would send
    shown: set = field(default_factory=set)
    query: str = ""

    async def connect(self):
        import websockets
        url = urlparse(self.base)
        self.ws = await websockets.connect(f"ws://{url.netloc}/_stcore/stream", subprotocols=["streamlit"],
                                           additional_headers={"Cookie": f"attention_lab_replica={self.cookie}"},
                                           max_size=None, open_timeout=self.timeout_s, ping_interval=None)

    async def close(self):
        if self.ws is not None:
            await self.ws.close()

    def _keep(self, what: str, proto) -> None:
        """A widget's value as the page holds it: first what the server drew, then what the user set, replaced
        again when the script sets it (``set_value``)."""
        if proto.id in self.states and not getattr(proto, "set_value", False):
            return
        value = WIDGETS[what](proto)
        if value is not None:
            self.states[proto.id] = value

    async def _rerun(self, page: str, changed: dict | None = None) -> Run:
        """Rerun ``page`` with every shown widget's state, as a page sends it, ``changed`` (id -> WidgetState)
        replacing some."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = page
        changed = changed or {}
        for wid, state in {**{w: self.states[w] for w in self.shown if w in self.states}, **changed}.items():
            state = WidgetState(id=wid, **state)
            msg.rerun_script.widget_states.widgets.append(state)
        for wid, state in changed.items():
            if "trigger_value" not in state:
                self.states[wid] = state
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        chart, charts, exceptions, seen = None, 0, [], {}
        deadline = t0 + self.timeout_s
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.perf_counter()))
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                what = el.WhichOneof("type")
                if what == "plotly_chart":
                    charts += 1
                    chart = chart if chart is not None else time.perf_counter() - t0
                elif what == "exception":
                    exceptions.append(el.exception.message[:300])
                elif what in WIDGETS:
                    proto = getattr(el, what)
                    seen[proto.label] = proto.id
                    self._keep(what, proto)
            elif kind == "page_info_changed":
                self.query = fm.page_info_changed.query_string  # what the address bar now holds
            elif kind == "script_finished" and fm.script_finished == DONE:
                self.widgets = seen
                self.shown = set(seen.values())
                return Run(chart, time.perf_counter() - t0, charts, exceptions, seen)

    async def open(self, page: str, **params) -> Run:
        """A page opened from a link (the first run of a session reads the link's parameters)."""
        self.query = urlencode(params)
        return await self._rerun(page)

    async def switch(self, page: str) -> Run:
        """A page opened from the navigation: the app keeps the shared view in the query string."""
        return await self._rerun(page)

    async def click(self, page: str, label: str) -> Run:
        return await self._rerun(page, {self.widgets[label]: {"trigger_value": True}})

    async def type(self, page: str, label: str, text: str) -> Run:
        return await self._rerun(page, {self.widgets[label]: {"string_value": text}})

"""The load test's reading of its servers' logs (bench/load_test.py server_tracebacks): a websocket closing under
Streamlit's own transport is counted apart; every other traceback, and any with a frame of our code, still counts."""
import load_test

SITE = "/venv/lib/python3.11/site-packages"
TEARDOWN = f'''2026-11-28 02:45:01 ERROR    Exception in ASGI application
Traceback (most recent call last):
  File "{SITE}/streamlit/web/server/starlette/starlette_websocket.py", line 480, in _websocket_endpoint
    await websocket.send_bytes(msg)
  File "{SITE}/starlette/websockets.py", line 98, in send
    raise WebSocketDisconnected('WebSocket is not connected. Need to call "accept" first.')
starlette.websockets.WebSocketDisconnected: WebSocket is not connected. Need to call "accept" first.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "{SITE}/uvicorn/protocols/websockets/websockets_sansio_impl.py", line 409, in run_asgi
    result = await self.app(self.scope, self.receive, self.send)
  File "{SITE}/streamlit/web/server/starlette/starlette_websocket.py", line 524, in _websocket_endpoint
    await websocket.close()
  File "{SITE}/starlette/websockets.py", line 104, in send
    raise WebSocketDisconnected('Cannot call "send" once a close message has been sent.')
starlette.websockets.WebSocketDisconnected: Cannot call "send" once a close message has been sent.
'''


def test_a_websocket_closing_under_streamlits_transport_is_counted_apart():
    assert load_test.server_tracebacks(TEARDOWN) == {"other": 0, "teardown": 2}
    assert load_test.server_tracebacks("INFO all well\n" * 3) == {"other": 0, "teardown": 0}


def test_any_other_traceback_still_counts():
    ours = f'  File "{load_test.ROOT}/app/pages_common.py", line 12, in render\n    send(x)\n'
    with_our_frame = TEARDOWN.replace("Traceback (most recent call last):\n",
                                      "Traceback (most recent call last):\n" + ours, 1)
    assert load_test.server_tracebacks(with_our_frame) == {"other": 1, "teardown": 1}
    other_error = TEARDOWN.replace("starlette.websockets.WebSocketDisconnected: Cannot", "RuntimeError: Cannot")
    assert load_test.server_tracebacks(other_error) == {"other": 1, "teardown": 1}
    frameless = "Traceback (most recent call last):\nstarlette.websockets.WebSocketDisconnected: x\n"
    assert load_test.server_tracebacks(frameless) == {"other": 1, "teardown": 0}
    assert load_test.server_tracebacks(TEARDOWN * 3)["teardown"] == 6

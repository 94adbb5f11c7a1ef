"""tests/browser.launch across threads, as the suite uses it: the load test's sessions open browsers in threads that
then end, an e2e session browser stays open in the main thread while a later file opens its own."""
import threading

from browser import launch


def _title(browser) -> str:
    page = browser.new_page()
    page.set_content("<title>ok</title>")
    return page.title()


def test_a_browser_after_one_in_an_ended_thread_and_beside_an_open_one():
    seen = {}

    def session():
        with launch() as b:
            seen["thread"] = _title(b)
    t = threading.Thread(target=session)
    t.start()
    t.join()
    assert seen == {"thread": "ok"}
    with launch() as outer:      # the main thread's first browser after the thread's Playwright ended with it
        with launch() as inner:  # a second one while the first is open (one Playwright for both)
            assert _title(inner) == "ok"
        assert _title(outer) == "ok"
    with launch() as again:      # and after both closed, a fresh start
        assert _title(again) == "ok"

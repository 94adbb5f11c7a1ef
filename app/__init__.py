"""Attention Lab's shared UI layer: shell, figures, exports, embeddings of bertviz."""
# pandas is imported here, whole, before any page runs. plotly reads ``sys.modules["pandas"]`` without importing it
# (``get_module("pandas", should_load=False)``) every time it validates an array, so while one session's thread is
# importing pandas (the first page that uses it), a chart built in another session's thread sees the half-imported
# module and fails ("partially initialized module 'pandas' has no attribute 'Series'"): the Training page's live
# chart did, in 2 of 4 load-test runs. Every thread that draws has imported ``app`` first, and Python's import lock
# makes it wait until this line is done. tests/app/test_import_race.py reproduces the race.
import pandas  # noqa: F401

"""A test run must not overwrite the README's tracked screenshots unless asked to (issue: e2e runs rewrote
docs/screenshots/*.png on every run)."""
from browser import ROOT, shot_folders


def test_screenshots_go_to_test_artifacts_only_unless_an_update_is_asked_for(monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_UPDATE_SCREENSHOTS", raising=False)
    assert shot_folders(True) == [ROOT / "test-artifacts"] and shot_folders(False) == [ROOT / "test-artifacts"]
    monkeypatch.setenv("ATTENTION_LAB_UPDATE_SCREENSHOTS", "1")
    assert shot_folders(True) == [ROOT / "test-artifacts", ROOT / "docs" / "screenshots"]
    assert shot_folders(False) == [ROOT / "test-artifacts"]

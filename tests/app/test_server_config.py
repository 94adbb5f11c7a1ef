"""The server settings in .streamlit/config.toml: nothing phoned home, XSRF on, the watcher off, one upload limit."""
import tomllib
from pathlib import Path

from app import uploads

CONFIG = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())


def test_no_usage_statistics_and_xsrf_protection():
    assert CONFIG["browser"]["gatherUsageStats"] is False
    assert CONFIG["server"]["enableXsrfProtection"] is True
    assert CONFIG["server"]["fileWatcherType"] == "none"  # the watcher crashes on torch.classes


def test_server_upload_limit_is_the_apps_limit():
    # Streamlit counts its limit in MiB: the server refuses anything more than the app's own limit plus
    # less than 1 MiB, so a large file never even reaches the server's memory
    server = CONFIG["server"]["maxUploadSize"] * 2**20
    assert uploads.MAX_UPLOAD <= server < uploads.MAX_UPLOAD + 2**20

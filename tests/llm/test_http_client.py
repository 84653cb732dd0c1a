"""A proxy the environment names that cannot be used is one sentence naming its variable.

Before: "unexpected ImportError: Using SOCKS proxy, but the 'socksio' package is not
installed" (exit code 3), from a model server's client and from a download alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.cli import main
from curator.llm.catalogue import CatalogueEntry
from curator.llm.download import DownloadError, download_model
from curator.llm.http_backend import HttpBackend
from curator.llm.http_client import PROXY_VARIABLES
from curator.llm.server_http import ServerError


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an environment naming no proxy (the runner's own may)."""
    for variable in (*PROXY_VARIABLES, "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.lower(), raising=False)


PROXIES = ["socks5://127.0.0.1:1", "ftp://user:Pw9secret@x", "http://127.0.0.1:notaport"]


def _entry() -> CatalogueEntry:
    return CatalogueEntry(
        name="tiny",
        title="Tiny",
        file="tiny.gguf",
        url="http://127.0.0.1:9/model.gguf",
        size_bytes=None,
        sha256=None,
        ram_gb=0.1,
        context_length=512,
        licence="test",
        note="test",
        source="test",
    )


@pytest.mark.parametrize("variable", ["ALL_PROXY", "https_proxy", "HTTP_PROXY"])
@pytest.mark.parametrize("proxy", PROXIES)
def test_an_unusable_proxy_is_named_by_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, proxy: str
) -> None:
    monkeypatch.setenv(variable, proxy)
    for call, error in (
        (lambda: HttpBackend("http://127.0.0.1:9"), ServerError),
        (lambda: download_model(_entry(), tmp_path), DownloadError),
    ):
        with pytest.raises(error) as raised:
            call()
        said = str(raised.value)
        assert said.startswith(f"the proxy given by ${variable} cannot be used (")
        assert "Pw9secret" not in said and "\n" not in said


def test_the_command_line_says_it_in_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1")
    db = str(tmp_path / "c.sqlite")
    assert main(["--db", db, "--create", "classify", "--server", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curator: error: the proxy given by $ALL_PROXY") and err.count("\n") == 1


@pytest.mark.parametrize("proxy", ["http://127.0.0.1:1", "http://no-such-proxy.invalid:3128"])
def test_a_proxy_that_cannot_be_reached_is_named_in_the_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, proxy: str
) -> None:
    """A proxy httpx takes but cannot connect through: the failure named the model server
    alone ("the host 127.0.0.1 was not found", when the proxy's was not)."""
    monkeypatch.setenv("HTTP_PROXY", proxy)
    with pytest.raises(ServerError) as raised:
        HttpBackend("http://127.0.0.1:9")
    said = str(raised.value)
    assert "(through the proxy given by $HTTP_PROXY): " in said and "\n" not in said
    assert "host 127.0.0.1 was not found" not in said
    with pytest.raises(DownloadError, match=r"through the proxy given by \$HTTP_PROXY"):
        download_model(_entry(), tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: the server's own failure
    with pytest.raises(ServerError) as direct:
        HttpBackend("http://127.0.0.1:9")
    assert "proxy" not in str(direct.value)

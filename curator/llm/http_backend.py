"""The :class:`~curator.llm.backend.Backend` protocol over an OpenAI-compatible server.

Prompts go to ``/v1/completions`` as raw text with the chat template applied here, exactly
as the in-process backend builds them (see :mod:`curator.llm.chat`), so the same prompt
reaches the model either way and the server's prefix cache sees a byte-identical prefix.

Label scoring, not sampling. Servers return log-probabilities only for *generated*
tokens (llama-server ``n_probs``, Ollama ``top_logprobs`` <= 20, llama-cpp-python's
server ``logprobs``), top-N of them. A label's log-probability is the sum over its tokens
of ``log p(token | prompt + the label's tokens before it)``; each term is read from the
top-N of one ``max_tokens=1`` request whose prompt ends where that token starts. When the
labels differ in their first token and are one token long, that is one request; longer
labels cost one request per distinct label prefix (the server's prompt cache makes those
cheap). The result is ``exact`` when every token was in the top N, ``first-token-approx``
when one was not (its log-probability is then bounded by the smallest one returned), and
``unscored`` for a server that returns no log-probabilities at all: its answer is then
generated under a grammar that admits only the labels.

Cancellation closes the streaming response, which aborts the request on the server
(llama.cpp stops generating when the client goes away). Failures become one-line
:class:`ServerError` messages (exit code 2 on the CLI).
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import httpx

from curator.errors import CuratorError
from curator.llm.backend import (
    Completion,
    LabelScores,
    StopCheck,
    StopRequested,
    TokenCallback,
    require_finite,
)
from curator.llm.chat import CHATML, ChatTemplate, template_from_jinja
from curator.llm.model_file import ModelInfo

SERVER_ENV = "CURATOR_SERVER"
API_KEY_ENV = "CURATOR_API_KEY"
TOP_N = 20  # Ollama's and OpenAI's upper bound; llama.cpp servers accept more
RETRY_STATUS = (429, 503)
TRUNCATION_MARKER = "\n[...]\n"


FORCED_TOP_N = 1000  # llama-cpp-python sorts the whole vocabulary anyway
POLL_S = 0.05  # how often a waiting call looks at should_stop
_T = TypeVar("_T")


class _Cancelled(Exception):
    """should_stop turned true while a request was in flight."""


class ServerError(CuratorError):
    """The model server could not be used (one line, exit code 2)."""

    exit_code = 2


def public_url(url: str) -> str:
    """The URL without user name or password (what a run records)."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets ("http://[::1]:8080")
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class HttpBackend:
    """A model behind an OpenAI-compatible HTTP server (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        n_ctx: int = 4096,
        timeout: float = 120.0,
        retries: int = 3,
        template: ChatTemplate | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = public_url(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )
        self._retries = retries
        self.model_info: ModelInfo | None = None
        self.template = template or CHATML
        self._n_ctx = n_ctx
        self._tokenize_path: str | None = None
        self._bos: list[int] = []
        self._label_cache: dict[tuple[str, ...], list[list[int]]] = {}
        self._pieces: dict[int, str] = {}
        self._texts: dict[tuple[int, ...], str] = {}
        #: The prompt of the last completion request: the server's prompt cache holds it.
        self._sent = ""
        self.kind = "openai"
        self.model = ""
        self.models: list[str] = []
        """Every model id the server listed at ``/v1/models`` (Settings offers them)."""
        try:
            self._detect(model)
        except BaseException:
            self._client.close()  # no connection left behind by a failed start
            raise
        self.offload = f"server {self.kind} at {self.url}"

    # -- Backend protocol ------------------------------------------------------------------

    @property
    def remote(self) -> dict[str, Any]:
        return {"url": self.url, "model": self.model, "kind": self.kind}

    @property
    def scoring_method(self) -> str:
        if self._tokenize_path is None:
            return "constrained generation (unscored): the server cannot tokenize"
        return f"label log-probabilities from the server's top-{TOP_N} (exact when all in it)"

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def close(self) -> None:
        self._client.close()

    def tokenize(self, text: str) -> list[int]:
        if self._tokenize_path is None:  # no tokenizer: a rough count, for batching only
            return list(range(max(1, len(text) // 4))) if text else []
        tokens = self._tokenize(text)
        return tokens[len(self._bos) :] if tokens[: len(self._bos)] == self._bos else tokens

    def chat_prefix(self, system: str, user_start: str) -> str:
        return self.template.prefix(system, user_start)

    def complete(
        self,
        prefix: str,
        item: str = "",
        *,
        max_tokens: int,
        grammar: str | None = None,
        on_token: TokenCallback | None = None,
        should_stop: StopCheck | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        repeat_penalty: float = 1.0,
    ) -> Completion:
        start = time.perf_counter()
        item, truncated, item_tokens = self._fit(prefix, item, max_tokens)
        body: dict[str, Any] = {
            "prompt": prefix + item + self.template.tail,
            "max_tokens": max_tokens,
            "temperature": 0.0 if temperature is None else temperature,
            "stream": True,
        }
        if seed is not None:
            body["seed"] = seed
        if repeat_penalty != 1.0:
            body["repeat_penalty"] = repeat_penalty
        if grammar is not None and self.kind in ("llama_cpp.server", "llama-server"):
            body["grammar"] = grammar  # other servers: the client-side parsers decide
        pieces: list[str] = []
        stop_reason = "stop"
        tokens_in = tokens_out = 0
        try:
            for event in self._cancellable_stream(body, should_stop):
                choice = _first_choice(event)
                text = str(choice.get("text") or "")
                if text:
                    pieces.append(text)
                    tokens_out += 1
                    if on_token is not None:
                        on_token(text)
                if choice.get("finish_reason") == "length":
                    stop_reason = "length"
                usage = event.get("usage") or {}
                tokens_in = int(usage.get("prompt_tokens", tokens_in) or tokens_in)
        except _Cancelled:
            stop_reason = "cancelled"
        return Completion(
            text="".join(pieces),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cached_tokens=0,
            seconds=time.perf_counter() - start,
            stop_reason=stop_reason,
            truncated=truncated,
            item_tokens=item_tokens,
        )

    def classify(
        self,
        prefix: str,
        item: str,
        labels: Sequence[str],
        *,
        answer_prefix: str = "",
        should_stop: StopCheck | None = None,
    ) -> LabelScores:
        if len(set(labels)) != len(labels) or not labels:
            raise ValueError("labels must be distinct and non-empty")
        start = time.perf_counter()
        item, truncated, item_tokens = self._fit(prefix, item, 8)
        prompt = prefix + item + self.template.tail + answer_prefix
        if self._tokenize_path is None:
            sep = " " if answer_prefix and not answer_prefix[-1].isspace() else ""
            return self._classify_unscored(prompt, sep, labels, start, truncated, item_tokens)
        label_tokens = self._label_tokens(tuple(labels), answer_prefix)
        if self.kind == "llama_cpp.server" and self._sent.startswith(prompt):
            # Held in full, the prompt's last token would be evaluated alone (_realign).
            try:
                self._cancellable(partial(self._realign, prefix + item), should_stop)
            except _Cancelled:
                raise StopRequested from None
        tops: dict[tuple[int, ...], tuple[dict[int, float], float, int]] = {}
        forced: dict[tuple[int, ...], dict[int, float]] = {}
        approximate = False
        logprobs: dict[str, float] = {}
        tokens_in = 0
        for label, seq in zip(labels, label_tokens, strict=True):
            total = 0.0
            for n in range(len(seq)):
                key = tuple(seq[:n])
                # The separator is part of the label's first token (" noise").
                text = prompt + self._text_of(key)
                if self.kind == "llama_cpp.server":
                    if key in forced and seq[n] in forced[key]:
                        value, used = forced[key][seq[n]], 0
                    else:
                        try:
                            if not key and key in forced:
                                self._cancellable(
                                    partial(self._realign, prefix + item), should_stop
                                )
                            value, others, used = self._cancellable(
                                partial(self._forced_logprob, text, seq[n]), should_stop
                            )
                        except _Cancelled:
                            raise StopRequested from None
                        # The other labels' tokens at this position, from the same
                        # evaluation (asking again would re-evaluate the prompt's last
                        # token alone, which llama.cpp computes slightly differently).
                        forced.setdefault(key, {}).update(
                            {t: others[p] for t, p in self._pieces.items() if p in others}
                        )
                    total += value
                    tokens_in = max(tokens_in, used)
                    continue
                if key not in tops:
                    try:
                        tops[key] = self._cancellable(
                            partial(self._top_logprobs, text), should_stop
                        )
                    except _Cancelled:
                        raise StopRequested from None
                    tokens_in = max(tokens_in, tops[key][2])
                found, floor, _ = tops[key]
                if seq[n] in found:
                    total += found[seq[n]]
                else:  # outside the top N: at most the smallest returned log-probability
                    total += floor
                    approximate = True
            logprobs[label] = total
        require_finite("label scores", list(logprobs.values()))
        best = max(logprobs.values())
        weights = {k: math.exp(v - best) for k, v in logprobs.items()}
        norm = sum(weights.values())
        probabilities = {k: w / norm for k, w in weights.items()}
        label = max(probabilities, key=lambda k: probabilities[k])
        return LabelScores(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            tokens_in=tokens_in,
            cached_tokens=0,
            seconds=time.perf_counter() - start,
            logprobs=logprobs,
            truncated=truncated,
            item_tokens=item_tokens,
            method="first-token-approx" if approximate else "exact",
        )

    # -- internals -------------------------------------------------------------------------

    def _classify_unscored(
        self,
        prompt: str,
        sep: str,
        labels: Sequence[str],
        start: float,
        truncated: bool,
        item_tokens: int,
    ) -> LabelScores:
        """A server without a tokenizer: the label is generated, constrained to the set."""
        grammar = "root ::= " + " | ".join(f'"{sep}{label}"' for label in labels)
        body: dict[str, Any] = {"prompt": prompt, "max_tokens": 16, "temperature": 0.0}
        if self.kind in ("llama_cpp.server", "llama-server"):
            body["grammar"] = grammar
        data = self._post("/v1/completions", body)
        text = str(_first_choice(data).get("text") or "").strip()
        if text not in labels:
            raise ServerError(f"the server answered {text[:60]!r}, which is not a label")
        probabilities = {k: 1.0 if k == text else 0.0 for k in labels}
        return LabelScores(
            label=text,
            confidence=1.0,
            probabilities=probabilities,
            tokens_in=int((data.get("usage") or {}).get("prompt_tokens", 0) or 0),
            cached_tokens=0,
            seconds=time.perf_counter() - start,
            truncated=truncated,
            item_tokens=item_tokens,
            method="unscored",
        )

    def _realign(self, head: str) -> None:
        """Make the server's prompt cache end inside ``head``, so that the next request
        evaluates the prompt's closing (the tokens after ``head``) as one batch.

        Asked for a prompt it holds in full, ``Llama.generate`` evaluates its last token
        again, alone, and llama.cpp computes a batch of one token slightly differently
        from a longer batch (see :mod:`curator.llm.llama_cpp_backend`): the label scores
        read from it, and all built on that cache entry, would then differ from the
        in-process ones. This happens when the prompt was the last one asked for, and when
        a label's first token was missing from the first evaluation's top N. One short
        request that keeps the episode in the cache but not the turn's closing avoids it:
        the closing is evaluated again as a batch, with bit-identical results.
        """
        mark = "#" if self.template.tail.startswith("~") else "~"
        self._post("/v1/completions", {"prompt": head + mark, "max_tokens": 1, "temperature": 0.0})

    def _text_of(self, tokens: tuple[int, ...]) -> str:
        """The text of a label's first tokens, as the server detokenizes them (cached)."""
        if not tokens:
            return ""
        found = self._texts.get(tokens)
        if found is None:
            found = self._texts[tokens] = self._detokenize(list(tokens))
        return found

    def _forced_logprob(self, prompt: str, token: int) -> tuple[float, dict[str, float], int]:
        """The exact log-probability of ``token`` after ``prompt`` (llama-cpp-python),
        the top :data:`FORCED_TOP_N` of the same position by text, and the prompt's size.

        A logit bias makes the server generate that token; the server computes the
        reported log-probabilities from the unbiased logits (the bias is applied to the
        sampler's copy), so they are the model's own values, whatever the top N holds.
        """
        body = {
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": FORCED_TOP_N,
            "logit_bias": {str(token): 100.0},
        }
        data = self._post("/v1/completions", body)
        try:
            logprobs = data["choices"][0]["logprobs"]
            value = float(logprobs["token_logprobs"][0])
            top = {str(k): float(v) for k, v in dict(logprobs["top_logprobs"][0]).items()}
        except (KeyError, IndexError, TypeError, ValueError):
            raise ServerError(f"malformed response from {self.url}: no log-probability") from None
        return value, top, int((data.get("usage") or {}).get("prompt_tokens", 0) or 0)

    def _top_logprobs(self, prompt: str) -> tuple[dict[int, float], float, int]:
        """The next token's top N as {label token id: log-probability}, the smallest
        log-probability returned (the bound for a token outside the top N), and the
        prompt's token count. The server names tokens by their text; the labels' tokens
        are matched by their pieces."""
        body = {"prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": TOP_N}
        data = self._post("/v1/completions", body)
        try:
            by_text = _top_of_first_token(data["choices"][0]["logprobs"])
        except (KeyError, IndexError, TypeError, ValueError):
            raise ServerError(
                f"malformed response from {self.url}: no top log-probabilities"
            ) from None
        if not by_text:
            raise ServerError(f"malformed response from {self.url}: empty log-probabilities")
        found = {t: by_text[p] for t, p in self._pieces.items() if p in by_text}
        tokens_in = int((data.get("usage") or {}).get("prompt_tokens", 0) or 0)
        return found, min(by_text.values()), tokens_in

    def _label_tokens(self, labels: tuple[str, ...], answer_prefix: str) -> list[list[int]]:
        """Each label's tokens as they follow the answer's opening (as the local backend)."""
        key = (*labels, "\x00" + answer_prefix)
        found = self._label_cache.get(key)
        if found is None:
            sep = " " if answer_prefix and not answer_prefix[-1].isspace() else ""
            start_text = self.template.tail + answer_prefix
            start = self.tokenize(start_text)
            found = []
            for label in labels:
                joined = self.tokenize(start_text + sep + label)
                if joined[: len(start)] == start and joined[len(start) :]:
                    seq = joined[len(start) :]
                else:
                    seq = self.tokenize(sep + label)
                if not seq:
                    raise ValueError(f"label {label!r} has no tokens")
                for token in seq:
                    if token not in self._pieces:
                        self._pieces[token] = self._detokenize([token])
                found.append(seq)
            self._label_cache[key] = found
        return found

    def _fit(self, prefix: str, item: str, reserve: int) -> tuple[str, bool, int]:
        """Cut the item's middle (by characters, sized by tokens) to fit the context."""
        if self._tokenize_path is None:
            return item, False, len(item) // 4
        item_tokens = len(self.tokenize(item))
        fixed = len(self.tokenize(prefix + self.template.tail)) + reserve + 16
        room = self._n_ctx - fixed
        if item_tokens <= room:
            return item, False, item_tokens
        if room <= 0:
            raise ServerError("the prompt does not fit the server's context")
        keep = max(0, int(len(item) * room / item_tokens) - len(TRUNCATION_MARKER))
        head = keep // 2
        return (
            item[:head] + TRUNCATION_MARKER + item[len(item) - (keep - head) :],
            True,
            item_tokens,
        )

    def _tokenize(self, text: str) -> list[int]:
        assert self._tokenize_path is not None
        if self._tokenize_path == "/extras/tokenize":
            data = self._post(self._tokenize_path, {"input": text, "model": self.model})
        else:
            data = self._post(self._tokenize_path, {"content": text, "add_special": False})
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise ServerError(f"malformed response from {self.url}{self._tokenize_path}")
        return [int(t) for t in tokens]

    def _detokenize(self, tokens: list[int]) -> str:
        if not tokens:
            return ""
        if self._tokenize_path == "/extras/tokenize":
            data = self._post("/extras/detokenize", {"tokens": tokens, "model": self.model})
            return str(data.get("text", ""))
        data = self._post("/detokenize", {"tokens": tokens})
        return str(data.get("content", ""))

    def _detect(self, model: str | None) -> None:
        """Which server this is, which model, and how it tokenizes (``/v1/models`` etc.)."""
        listing = self._get("/v1/models")
        ids = [str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict)]
        self.models = ids
        if model:
            if ids and model not in ids:
                raise ServerError(
                    f"model {model!r} is not served at {self.url} (it has: {', '.join(ids)})"
                )
            self.model = model
        elif ids:
            self.model = ids[0]
        else:
            raise ServerError(f"{self.url} lists no model at /v1/models")
        props = self._get_optional("/props")
        if props is not None and "default_generation_settings" in props:
            self.kind = "llama-server"
            self._tokenize_path = "/tokenize"
            settings = props.get("default_generation_settings") or {}
            self._n_ctx = int(settings.get("n_ctx", self._n_ctx) or self._n_ctx)
            source = props.get("chat_template")
            if isinstance(source, str) and source.strip():
                try:
                    self.template = template_from_jinja(source)
                except Exception:  # an unsplittable template: ChatML, as for a file
                    self.template = CHATML
        elif self._get_optional("/api/version") is not None:
            self.kind = "ollama"
        else:
            try:
                self._post("/extras/tokenize", {"input": "", "model": self.model})
            except ServerError:
                pass
            else:
                self.kind = "llama_cpp.server"
                self._tokenize_path = "/extras/tokenize"
        if self._tokenize_path is not None:
            self._bos = self._tokenize("")

    # -- cancellation ----------------------------------------------------------------------

    def _cancellable(self, call: Callable[[], _T], should_stop: StopCheck | None) -> _T:
        """``call()`` on a helper thread while this one watches ``should_stop``.

        A blocked read cannot be interrupted from the thread doing it, so the request runs
        elsewhere and a cancel returns at once (:class:`_Cancelled`); the abandoned
        request's connection is closed when it ends and its result is dropped.
        """
        if should_stop is None:
            return call()
        if should_stop():
            raise _Cancelled
        box: queue.Queue[tuple[bool, Any]] = queue.Queue()

        def run() -> None:
            try:
                box.put((True, call()))
            except BaseException as exc:  # handed to the waiting thread
                box.put((False, exc))

        threading.Thread(target=run, name="curator-http", daemon=True).start()
        while True:
            try:
                ok, value = box.get(timeout=POLL_S)
            except queue.Empty:
                if should_stop():
                    raise _Cancelled from None
                continue
            if ok:
                return cast(_T, value)
            raise value

    def _cancellable_stream(
        self, body: dict[str, Any], should_stop: StopCheck | None
    ) -> Iterator[dict[str, Any]]:
        """The events of a streaming completion; a cancel closes the stream, which makes
        the server stop generating, and raises :class:`_Cancelled` at once."""
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        closing = threading.Event()

        def run() -> None:
            try:
                with self._stream(body) as stream:
                    for event in stream:
                        if closing.is_set():
                            return  # leaving the block closes the response
                        events.put(("event", event))
                events.put(("end", None))
            except BaseException as exc:
                events.put(("error", exc))

        threading.Thread(target=run, name="curator-http-stream", daemon=True).start()
        try:
            while True:
                try:
                    kind, value = events.get(timeout=POLL_S)
                except queue.Empty:
                    kind, value = "idle", None
                if should_stop is not None and should_stop():
                    raise _Cancelled
                if kind == "event":
                    yield value
                elif kind == "end":
                    return
                elif kind == "error":
                    raise value
        finally:
            closing.set()

    # -- HTTP ------------------------------------------------------------------------------

    def _get(self, path: str) -> dict[str, Any]:
        return self._json(self._request("GET", path), path)

    def _get_optional(self, path: str) -> dict[str, Any] | None:
        try:
            response = self._request("GET", path, quiet=True)
        except ServerError:
            return None
        if response.status_code != 200:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if "model" not in body and self.model:
            body = {**body, "model": self.model}
        if path == "/v1/completions":
            self._sent = str(body.get("prompt", ""))
        return self._json(self._request("POST", path, json=body), path)

    def _json(self, response: httpx.Response, path: str) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            raise ServerError(f"malformed response from {self.url}{path}: not JSON") from None
        if not isinstance(data, dict):
            raise ServerError(f"malformed response from {self.url}{path}: not an object")
        return data

    def _request(
        self, method: str, path: str, *, json: Any = None, quiet: bool = False
    ) -> httpx.Response:
        """One request, retried with backoff on 429/503; errors become one line."""
        delay = 0.5
        for attempt in range(self._retries + 1):
            try:
                response = self._client.request(method, path, json=json)
            except httpx.TimeoutException:
                raise ServerError(f"the model server at {self.url} timed out") from None
            except httpx.TransportError as exc:
                raise ServerError(_transport_message(self.url, exc)) from None
            if response.status_code in RETRY_STATUS and attempt < self._retries:
                time.sleep(_retry_after(response, delay))
                delay *= 2
                continue
            if not quiet:
                _check_status(response, self.url, path, self.model)
            return response
        raise AssertionError("unreachable")

    @contextmanager
    def _stream(self, body: dict[str, Any]) -> Iterator[Iterator[dict[str, Any]]]:
        """Server-sent events of a streaming completion; closing the block aborts it."""
        body = {**body, "model": self.model}
        self._sent = str(body.get("prompt", ""))
        try:
            with self._client.stream("POST", "/v1/completions", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    _check_status(response, self.url, "/v1/completions", self.model)
                yield _events(response, self.url)
        except httpx.TimeoutException:
            raise ServerError(f"the model server at {self.url} timed out") from None
        except httpx.TransportError as exc:
            raise ServerError(_transport_message(self.url, exc)) from None


def _events(response: httpx.Response, url: str) -> Iterator[dict[str, Any]]:
    import json

    seen = False
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        seen = True
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            event = json.loads(payload)
        except ValueError:
            raise ServerError(
                f"malformed response from {url}: a stream event is not JSON"
            ) from None
        if not isinstance(event, dict):
            raise ServerError(f"malformed response from {url}: a stream event is not an object")
        yield event
    if not seen:
        raise ServerError(f"malformed response from {url}: not a stream of events")


def _top_of_first_token(logprobs: Any) -> dict[str, float]:
    """{token text: log-probability} of the first generated token, in either shape:
    the legacy completions one (``top_logprobs``: a list of {text: logprob}) or the
    chat-style one newer servers also use for completions (``content``: a list of
    {token, logprob, top_logprobs: [{token, logprob}]})."""
    if "content" in logprobs and isinstance(logprobs["content"], list):
        first = logprobs["content"][0]
        return {str(e["token"]): float(e["logprob"]) for e in first["top_logprobs"]}
    return {str(k): float(v) for k, v in dict(logprobs["top_logprobs"][0]).items()}


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerError("malformed response from the model server: no choices")
    return choices[0]


def _retry_after(response: httpx.Response, default: float) -> float:
    try:
        return min(30.0, float(response.headers.get("retry-after", default)))
    except ValueError:
        return default


def _transport_message(url: str, exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return f"cannot reach the model server at {url}: connection refused"
    return f"the connection to the model server at {url} failed: {type(exc).__name__}"


def _check_status(response: httpx.Response, url: str, path: str, model: str) -> None:
    code = response.status_code
    if code == 200:
        return
    if code in (401, 403):
        raise ServerError(f"the model server at {url} refused the API key ({code})")
    if code == 404 and path.startswith("/v1/completions"):
        raise ServerError(f"the model server at {url} has no model {model!r} (404)")
    raise ServerError(f"the model server at {url} answered {code} to {path}")

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

The seams: :mod:`curator.llm.server_http` moves bytes (deadlines, budgets, retries,
status messages), :mod:`curator.llm.server_answer` reads every field of an answer with
its type and range checked, and this module speaks the servers' dialects (detection,
tokenizing, label scoring, generation).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx

from curator.core.secret_forms import SecretHold
from curator.core.server_url import api_key_problem, server_base_url, server_url_problem
from curator.llm.backend import (
    Completion,
    LabelScores,
    StopCheck,
    StopRequested,
)
from curator.llm.chat import CHATML, ChatTemplate, TemplateRefused, template_from_jinja
from curator.llm.generation import (
    Generation,
    GenerationBase,
    GenerationRequest,
    label_softmax,
)
from curator.llm.model_file import ModelInfo
from curator.llm.server_answer import Fields, parse_object
from curator.llm.server_http import (
    API_KEY_ENV,
    SERVER_ENV,
    Cancelled,
    Connection,
    ServerError,
    ServerLimits,
)

__all__ = ["API_KEY_ENV", "SERVER_ENV", "HttpBackend", "ServerError", "ServerLimits", "public_url"]

TOP_N = 20  # Ollama's and OpenAI's upper bound; llama.cpp servers accept more
PROBE_S = 10.0
"""The most an endpoint the server may not serve (``/props``, ``/api/version``,
``/extras/tokenize``) is waited for while the server's kind is found out."""
TRUNCATION_MARKER = "\n[...]\n"
FORCED_TOP_N = 1000  # llama-cpp-python sorts the whole vocabulary anyway
MAX_CONTEXT = 1 << 24  # no model has a context of more than 16 M tokens


def public_url(url: str) -> str:
    """The server's base URL as a run records it: no credentials, no trailing ``/v1``."""
    return server_base_url(url)


class HttpBackend(GenerationBase):
    """A model behind an OpenAI-compatible HTTP server (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        n_ctx: int = 4096,
        limits: ServerLimits | None = None,
        retries: int = 3,
        template: ChatTemplate | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        problem = server_url_problem(url) or api_key_problem(api_key or "")
        if problem:
            raise ServerError(problem)
        self.url = server_base_url(url)
        self.limits = limits or ServerLimits()
        self._http = Connection(
            self.url, api_key, self.limits, retries=retries, transport=transport
        )
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
        self._should_stop: StopCheck | None = None
        self.models: list[str] = []
        """Every model id the server listed at ``/v1/models`` (Settings offers them)."""
        self.notes: list[str] = []
        """What the detection of the server could not settle (a probe unanswered), one
        sentence each: the command line prints them."""
        try:
            self._detect(model)
        except BaseException:
            self._http.close()  # no connection left behind by a failed start
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
        self._http.close()

    def tokenize(self, text: str) -> list[int]:
        if self._tokenize_path is None:  # no tokenizer: a rough count, for batching only
            return list(range(max(1, len(text) // 4))) if text else []
        tokens = self._tokenize(text)
        return tokens[len(self._bos) :] if tokens[: len(self._bos)] == self._bos else tokens

    def chat_prefix(self, system: str, user_start: str) -> str:
        return self.template.prefix(system, user_start)

    def _generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        max_tokens, should_stop = request.max_tokens, request.should_stop
        item, truncated, item_tokens = self._fit(request.prefix, request.item, max_tokens)
        body: dict[str, Any] = {
            "prompt": request.prefix + item + self.template.tail,
            "max_tokens": max_tokens,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "stream": True,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.repeat_penalty != 1.0 or self.kind in ("llama_cpp.server", "llama-server"):
            # llama.cpp's servers default to 1.1, not to the 1.0 asked for: without it the
            # two backends would write different text from the same prompt
            body["repeat_penalty"] = request.repeat_penalty
        if request.grammar is not None and self.kind in ("llama_cpp.server", "llama-server"):
            body["grammar"] = request.grammar  # other servers: the client-side parsers decide
        gen = Generation(request, max_tokens)
        # The key sent may come back one token at a time: what may be its beginning waits
        # for the rest, so the live output, the loop watch and the text all see it masked.
        hold = SecretHold()
        stop_reason = "stop"
        tokens_in = 0
        events = self._http.stream(
            "/v1/completions",
            {**body, "model": self.model},
            max_tokens=max_tokens,
            should_stop=should_stop,
        )
        self._sent = body["prompt"]
        try:
            for raw in events:
                event = Fields(raw, f"{self.url}/v1/completions", "event")
                choice = _first_choice(event)
                text = choice.text("text")
                finish = choice.text("finish_reason")
                if finish == "length":
                    stop_reason = "length"
                tokens_in = _prompt_tokens(event, tokens_in)
                # Counted here: a server may ignore max_tokens. Its own "stop" on the
                # last allowed token still means the answer ended by itself.
                why = gen.take(hold.feed(text)) if text else gen.check()
                if why is not None:
                    stop_reason = "stop" if why == "length" and finish == "stop" else why
                    break
        except Cancelled:
            stop_reason = "cancelled"
        finally:
            events.close()  # abandons the request: the server stops generating
        gen.take(hold.flush(), count=False)
        return gen.completion(
            stop_reason,
            tokens_in=tokens_in,
            cached_tokens=0,
            seconds=time.perf_counter() - start,
            truncated=truncated,
            item_tokens=item_tokens,
        )

    def _score(
        self,
        prefix: str,
        item: str,
        labels: tuple[str, ...],
        answer_prefix: str,
        should_stop: StopCheck | None,
    ) -> LabelScores:
        self._should_stop = should_stop  # every request of this call watches it
        try:
            return self._classify(prefix, item, labels, answer_prefix)
        except Cancelled:
            raise StopRequested from None
        finally:
            self._should_stop = None

    # -- internals -------------------------------------------------------------------------

    def _classify(
        self, prefix: str, item: str, labels: Sequence[str], answer_prefix: str
    ) -> LabelScores:
        start = time.perf_counter()
        item, truncated, item_tokens = self._fit(prefix, item, 8)
        prompt = prefix + item + self.template.tail + answer_prefix
        if self._tokenize_path is None:
            sep = " " if answer_prefix and not answer_prefix[-1].isspace() else ""
            return self._classify_unscored(prompt, sep, labels, start, truncated, item_tokens)
        label_tokens = self._label_tokens(tuple(labels), answer_prefix)
        if self.kind == "llama_cpp.server" and self._sent.startswith(prompt):
            # Held in full, the prompt's last token would be evaluated alone (_realign).
            self._realign(prefix + item)
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
                        if not key and key in forced:
                            self._realign(prefix + item)
                        value, others, used = self._forced_logprob(text, seq[n])
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
                    tops[key] = self._top_logprobs(text)
                    tokens_in = max(tokens_in, tops[key][2])
                found, floor, _ = tops[key]
                if seq[n] in found:
                    total += found[seq[n]]
                else:  # outside the top N: at most the smallest returned log-probability
                    total += floor
                    approximate = True
            logprobs[label] = total
        probabilities = label_softmax(logprobs)
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
        data = self._post("/v1/completions", body, max_tokens=16)
        text = _first_choice(data).text("text").strip()
        if text not in labels:
            raise ServerError(
                f"the model server at {self.url} answered {text[:60]!r}, which is not a label"
            )
        probabilities = {k: 1.0 if k == text else 0.0 for k in labels}
        return LabelScores(
            label=text,
            confidence=1.0,
            probabilities=probabilities,
            tokens_in=_prompt_tokens(data, 0),
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
        logprobs = _first_choice(data).obj("logprobs", required=True)
        assert logprobs is not None
        values = logprobs.items("token_logprobs", required=True)
        tops = logprobs.items("top_logprobs", required=True)
        if not values or not tops:
            raise logprobs.invalid("token_logprobs", "empty")
        value = logprobs.logprob("token_logprobs", values[0])
        top = logprobs.logprob_table("top_logprobs", tops[0])
        return value, top, _prompt_tokens(data, 0)

    def _top_logprobs(self, prompt: str) -> tuple[dict[int, float], float, int]:
        """The next token's top N as {label token id: log-probability}, the smallest
        log-probability returned (the bound for a token outside the top N), and the
        prompt's token count. The server names tokens by their text; the labels' tokens
        are matched by their pieces."""
        body = {"prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": TOP_N}
        data = self._post("/v1/completions", body)
        logprobs = _first_choice(data).obj("logprobs", required=True)
        assert logprobs is not None
        by_text = _top_of_first_token(logprobs)
        if not by_text:
            raise logprobs.invalid("top_logprobs", "empty")
        found = {t: by_text[p] for t, p in self._pieces.items() if p in by_text}
        return found, min(by_text.values()), _prompt_tokens(data, 0)

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
                    raise ServerError(
                        f"the tokenizer at {self.url}{self._tokenize_path} returned no tokens "
                        f"for the label {label!r}"
                    )
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
            raise ServerError(
                f"the prompt does not fit the context of the model at {self.url} "
                f"({self._n_ctx:,} tokens)"
            )
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
        return data.integers("tokens")

    def _detokenize(self, tokens: list[int]) -> str:
        if not tokens:
            return ""
        if self._tokenize_path == "/extras/tokenize":
            data = self._post("/extras/detokenize", {"tokens": tokens, "model": self.model})
            return data.text("text")
        return self._post("/detokenize", {"tokens": tokens}).text("content")

    def _detect(self, model: str | None) -> None:
        """Which server this is, which model, and how it tokenizes (``/v1/models`` etc.)."""
        listing = self._get("/v1/models")
        ids = [m.text("id", required=True) for m in listing.objects("data")]
        self.models = ids
        if model:
            if ids and model not in ids:
                shown = ", ".join(i if len(i) <= 60 else i[:57] + "..." for i in ids[:10])
                more = f" and {len(ids) - 10} more" if len(ids) > 10 else ""
                raise ServerError(
                    f"model {model[:80]!r} is not served at {self.url} (it has: {shown}{more})"
                )
            self.model = model
        elif ids:
            self.model = ids[0]
        else:
            raise ServerError(f"{self.url} lists no model at {self.url}/v1/models")
        self._http.model = self.model
        props = self._get_optional("/props")
        if props is not None and props.has("default_generation_settings"):
            self.kind = "llama-server"
            self._tokenize_path = "/tokenize"
            settings = props.obj("default_generation_settings")
            if settings is not None:
                self._n_ctx = settings.integer("n_ctx", self._n_ctx, low=16, high=MAX_CONTEXT)
            source = props.text("chat_template")
            if source.strip():
                self.template = self._served_template(source)
        elif self._get_optional("/api/version") is not None:
            self.kind = "ollama"
        else:
            try:
                self._post("/extras/tokenize", {"input": "", "model": self.model}, probe=True)
            except ServerError as exc:
                self._unanswered(exc)
            else:
                self.kind = "llama_cpp.server"
                self._tokenize_path = "/extras/tokenize"
        if self._tokenize_path is not None:
            self._bos = self._tokenize("")

    def _served_template(self, source: str) -> ChatTemplate:
        """The server's chat template, rendered under the time and size budget."""
        try:
            return template_from_jinja(
                source, time_s=self.limits.template_s, max_bytes=self.limits.template_bytes
            )
        except TemplateRefused as exc:
            raise ServerError(f"the chat template served at {self.url}/props {exc}") from None
        except Exception:  # an unsplittable template: ChatML, as for a file
            return CHATML

    # -- HTTP ------------------------------------------------------------------------------

    def _get(self, path: str) -> Fields:
        reply = self._http.request("GET", path, should_stop=self._should_stop)
        self._http.check(reply, path)
        return parse_object(reply.body, f"{self.url}{path}")

    def _probe_s(self) -> float:
        """How long a probe of an endpoint the server may not serve is waited for: a
        server silent on each of them held a run three full deadlines (six minutes) with
        nothing said, before it was scored as a server without a tokenizer."""
        return min(self.limits.answer_s, PROBE_S)

    def _unanswered(self, exc: ServerError) -> None:
        """A probe that failed: a deadline is said (:attr:`notes`), a refusal is the
        answer that the server has no such endpoint."""
        if "did not answer" in str(exc):
            self.notes.append(f"{exc}; read as not served, so the server's kind may be wrong")

    def _get_optional(self, path: str) -> Fields | None:
        """The answer to ``path``, or None when the server has no such endpoint."""
        try:
            reply = self._http.request(
                "GET", path, should_stop=self._should_stop, within_s=self._probe_s()
            )
        except ServerError as exc:
            self._unanswered(exc)
            return None
        if reply.status != 200:
            return None
        try:
            return parse_object(reply.body, f"{self.url}{path}")
        except ServerError:
            return None

    def _post(
        self, path: str, body: dict[str, Any], *, max_tokens: int = 1, probe: bool = False
    ) -> Fields:
        if "model" not in body and self.model:
            body = {**body, "model": self.model}
        if path == "/v1/completions":
            self._sent = str(body.get("prompt", ""))
        reply = self._http.request(
            "POST",
            path,
            body,
            max_tokens=max_tokens,
            should_stop=self._should_stop,
            within_s=self._probe_s() if probe else None,
        )
        self._http.check(reply, path)
        return parse_object(reply.body, f"{self.url}{path}")


def _top_of_first_token(logprobs: Fields) -> dict[str, float]:
    """{token text: log-probability} of the first generated token, in either shape:
    the legacy completions one (``top_logprobs``: a list of {text: logprob}) or the
    chat-style one newer servers also use for completions (``content``: a list of
    {token, logprob, top_logprobs: [{token, logprob}]})."""
    if logprobs.has("content") and isinstance(logprobs.data["content"], list):
        content = logprobs.objects("content", required=True)
        if not content:
            raise logprobs.invalid("content", "empty")
        return {
            e.text("token", required=True): e.logprob("logprob", e.data.get("logprob"))
            for e in content[0].objects("top_logprobs", required=True)
        }
    tops = logprobs.items("top_logprobs", required=True)
    if not tops:
        raise logprobs.invalid("top_logprobs", "empty")
    return logprobs.logprob_table("top_logprobs[0]", tops[0])


def _first_choice(data: Fields) -> Fields:
    choices = data.objects("choices", required=True)
    if not choices:
        raise data.invalid("choices", "empty")
    return choices[0]


def _prompt_tokens(data: Fields, default: int) -> int:
    """``usage.prompt_tokens`` of an answer or a stream event (``default`` when absent)."""
    usage = data.obj("usage")
    return default if usage is None else usage.integer("prompt_tokens", default, high=MAX_CONTEXT)

"""Generated knowledge patterns: templates and a vocabulary, with controlled near-duplicates.

The data imitates what a distiller writes into an agent's memory: short behavioural
patterns, some long multi-clause ones (200+ characters, where difflib's autojunk
heuristic kicks in), and near-duplicates (typos, swapped words, appended clauses) of
texts already in memory or earlier in the same batch.  The import benchmark uses it;
the dedup benchmark measures on real observations instead.
"""

from __future__ import annotations

import random

SUBJECTS = [
    "Users who mention rate limits",
    "Customers asking about refunds",
    "Developers using the async client",
    "Admins on the enterprise plan",
    "New users in their first week",
    "People who report login failures",
    "Teams migrating from the legacy API",
    "Users on mobile devices",
    "Tickets tagged as urgent",
    "Agents handling billing questions",
    "Users who enable two-factor authentication",
    "Trial accounts close to expiry",
    "Students on the education discount",
    "Customers in the EU region",
    "Operators running the self-hosted build",
    "Users who write in Spanish",
    "Accounts with more than fifty seats",
    "People who paste stack traces",
    "Callers who were transferred twice",
    "Users who skipped the tutorial",
    "Partners integrating via webhooks",
    "Data teams exporting CSV reports",
    "Designers sharing large files",
    "Managers reviewing monthly invoices",
    "Users on the free tier",
    "Researchers asking about the dataset license",
    "Merchants with failed payouts",
    "Customers who churned last quarter",
    "Night-shift support agents",
    "Users who contact us on weekends",
]
VERBS = [
    "tend to",
    "usually",
    "often",
    "rarely",
    "almost always",
    "frequently",
    "are likely to",
    "seldom",
    "sometimes",
    "prefer to",
]
ACTIONS = [
    "retry within an hour",
    "open a second ticket",
    "ask for a human agent",
    "abandon the checkout flow",
    "switch to the web dashboard",
    "request a copy of the invoice",
    "upgrade their plan",
    "read the changelog first",
    "disable email notifications",
    "share screenshots of the error",
    "mention a competitor by name",
    "escalate to a manager",
    "reset their password twice",
    "ask about data retention",
    "request an API key rotation",
    "export all their data",
    "report the same bug again",
    "book a demo call",
    "ask for an extended trial",
    "complain about latency",
    "ask whether the service is down",
    "request a refund",
    "invite more teammates",
    "downgrade to the basic plan",
    "ask for SSO support",
    "leave a low satisfaction score",
    "look for the documentation page",
    "reply with a thank-you only",
    "cancel the subscription",
    "ask about GDPR compliance",
    "change their billing address",
    "ask for an SLA",
    "try the beta features",
    "contact sales instead of support",
    "forward the email to IT",
    "ask how to delete their account",
    "attach log files",
    "use the keyboard shortcuts",
    "reinstall the desktop app",
    "ask for a phone callback",
]
CONDITIONS = [
    "after a failed payment",
    "when the docs are unclear",
    "during peak hours",
    "on Monday mornings",
    "if the first answer is vague",
    "right after a release",
    "when latency exceeds two seconds",
    "before renewing",
    "after an outage",
    "when the invoice total changes",
    "if they were kept waiting",
    "at the end of the month",
    "after a price increase",
    "when the mobile app crashes",
    "during onboarding",
    "after reading the status page",
    "when a feature is deprecated",
    "if the reply arrives after six hours",
    "when they hit the storage quota",
    "after the second reminder email",
]
CONSEQUENCES = [
    "so prefill the form for them",
    "which suggests the onboarding email should mention it",
    "and a short apology reduces churn",
    "so link the status page proactively",
    "and they respond well to concrete timelines",
    "so route them to tier two directly",
    "and offering a call usually resolves it",
    "so keep the first reply under five sentences",
    "which is a strong churn signal",
    "and a checklist in the reply cuts follow-ups in half",
    "so mention the workaround before the root cause",
    "and they rarely read long replies",
]
#: Supporting sentences of long patterns: shared phrasing with varying details.
EVIDENCE = [
    "This was observed in {share} of the {count} conversations reviewed {period}",
    "The pattern held across both the {channel} and the {channel2} channels",
    "It is weaker for accounts older than {age} but still clearly visible",
    "{team} confirmed it independently in the {meeting}",
    "The effect disappears when the first response includes {remedy}",
    "It matters most for accounts that {segment}",
]
SLOTS = {
    "share": ["about a third", "roughly half", "nearly all", "a small minority", "two in five"],
    "count": ["40", "120", "350", "800", "1,200", "2,500"],
    "period": ["last month", "this quarter", "since the spring release", "over the holidays"],
    "channel": ["web", "mobile", "email", "chat", "phone"],
    "channel2": ["desktop", "API", "Slack", "SMS"],
    "age": ["a year", "six months", "two years", "90 days"],
    "team": ["Tier-one agents", "The billing team", "Two senior engineers", "Night-shift staff"],
    "meeting": ["weekly retro", "monthly review", "incident post-mortem", "QA calibration"],
    "remedy": ["a direct link", "an ETA", "a named contact", "a screenshot of the fix"],
    "segment": [
        "pay annually rather than monthly",
        "use SSO",
        "have a dedicated CSM",
        "were migrated from v1",
    ],
}


def evidence(rng: random.Random) -> str:
    """One supporting sentence with its slots filled in."""
    template = rng.choice(EVIDENCE)
    return template.format(**{key: rng.choice(values) for key, values in SLOTS.items()})


def sentence(rng: random.Random) -> str:
    """One plausible pattern; about one in seven is a long (200+ characters) one."""
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(ACTIONS)}"
    if rng.random() < 0.7:
        text += " " + rng.choice(CONDITIONS)
    if rng.random() < 0.4:
        text += ", " + rng.choice(CONSEQUENCES)
    text += "."
    if rng.random() < 0.15:
        while len(text) < 200 + rng.randrange(120):
            text += " " + evidence(rng) + "."
    return text


def typo(rng: random.Random, text: str) -> str:
    index = rng.randrange(len(text))
    return text[:index] + rng.choice("abcdefghijklmnopqrstuvwxyz") + text[index + 1 :]


def swap_words(rng: random.Random, text: str) -> str:
    words = text.split()
    if len(words) > 2:
        index = rng.randrange(len(words) - 1)
        words[index], words[index + 1] = words[index + 1], words[index]
    return " ".join(words)


def append_clause(rng: random.Random, text: str) -> str:
    return text.rstrip(".") + " " + rng.choice(CONDITIONS) + "."


def near_duplicate(rng: random.Random, text: str) -> str:
    """A controlled variant: 1-2 typos, a swapped word pair, or an appended clause."""
    roll = rng.random()
    if roll < 0.35:
        return typo(rng, typo(rng, text) if rng.random() < 0.5 else text)
    if roll < 0.65:
        return swap_words(rng, text)
    return append_clause(rng, text)


def make_data(n_new: int, n_existing: int, seed: int) -> tuple[list[str], list[str]]:
    """Existing memory plus a new batch: ~30% near-duplicates of memory, ~10% of the batch."""
    rng = random.Random(seed)
    existing = [sentence(rng) for _ in range(n_existing)]
    new: list[str] = []
    for _ in range(n_new):
        roll = rng.random()
        if roll < 0.30 and existing:
            new.append(near_duplicate(rng, rng.choice(existing)))
        elif roll < 0.40 and new:
            new.append(near_duplicate(rng, rng.choice(new)))
        else:
            new.append(sentence(rng))
    return new, existing

"""Conversational memory: is the session holding the answer in the top 5, overall and for questions about *when*?

    .venv/bin/python benchmarks/conversation_memory.py [--modes keyword,hybrid] [--questions]

A set of our own making, generated from a fixed seed (nothing here depends on the code measured; the
questions were decided before the time work they measure): about 75 dated sessions of one user talking
with an assistant from October 2025 to the day before "today" (2026-12-08, set for the search through
``CTX_TODAY``), each a Markdown note like those ``ctx hook`` writes: front matter ``date:`` and a
title, some dated only in their title or only in their file name. Seven subjects come back over the
year (a garden fence, a kitchen renovation, marathon training...), a decision each time; single facts
are told once; a few facts change (the rent, a venue).

Questions, each with its evidence session(s):

- ``single``: a fact told in one session ("What was the name of the vet who cleaned my cat's teeth?");
- ``multi``: two sessions needed ("How much did I spend on the vet and the bike repair together?");
- ``update``: the latest value wins ("How much is my rent now?": the session of the last change);
- ``temporal``: a subject that comes back, asked of a time ("What did I decide about the garden fence
  last week?", "in March", "two days ago", "in 2025"): the evidence is that subject's sessions in that
  time (one or two), among its seven or eight;
- ``anchored``: a time given by an event ("just before my trip to Japan"), reported apart.

Metric: recall@5 (the share of a question's evidence sessions in the top 5 of ``search``, the real
path through ``Harness.search``), its mean per category and overall, and ``all@5`` (every evidence
session in the top 5), for each mode (``hybrid`` embeds with the bundled model). Prints one JSON object;
``--questions`` prints the questions with their evidence instead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

TODAY = dt.date(2026, 12, 8)  # a Tuesday
START = dt.date(2025, 10, 1)
SEED = 53
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}

# Subjects that come back: (subject, what the user weighs, the decisions over time).
TOPICS = [
    ("garden fence", "the neighbours' dog keeps getting into the vegetable beds",
     ["cedar boards", "pressure-treated pine", "a metal frame with cedar slats", "waiting until spring",
      "hiring Olsen Fencing", "building it myself over two weekends", "a living hedge of hornbeam instead",
      "a lower four-foot fence with a gate"]),
    ("kitchen renovation", "the cabinets are falling apart and the counter space is tiny",
     ["keeping the old cabinets and repainting them", "solid oak cabinets", "a white quartz countertop",
      "moving the sink under the window", "an induction hob", "delaying it until after the holidays",
      "open shelving on the left wall", "terracotta floor tiles"]),
    ("marathon training", "my knee has been sore after the long runs",
     ["running three times a week", "a long run every Sunday morning", "signing up for the Berlin half marathon",
      "switching to trail shoes", "two weeks of rest for the knee", "interval sessions on Tuesdays",
      "a target time of four hours", "hiring a running coach"]),
    ("novel", "the middle chapters drag and the protagonist feels flat",
     ["renaming the protagonist to Ilse", "cutting the prologue", "switching to first person",
      "setting the story in Tallinn", "a goal of five thousand words a week", "querying literary agents in spring",
      "rewriting the ending so the brother survives"]),
    ("savings plan", "money keeps disappearing at the end of every month",
     ["saving 500 a month automatically", "cancelling two streaming subscriptions", "opening an index fund",
      "paying off the car loan first", "an emergency fund of three months of expenses",
      "moving the savings to a higher-rate account", "no eating out on weekdays"]),
    ("Portuguese lessons", "I want to talk with my partner's family without switching to English",
     ["Duolingo every morning before work", "a tutor on Thursday evenings", "reading a children's book aloud",
      "watching series with Portuguese subtitles", "sitting the A2 exam in June", "focusing on pronunciation",
      "switching to European Portuguese"]),
    ("home office", "my back hurts after long video calls",
     ["a standing desk", "a monitor arm", "a quieter keyboard", "moving the desk next to the window",
      "an ergonomic chair", "noise-cancelling headphones", "a second monitor in portrait mode"]),
]
RECENT = [1, 2, 3, 4, 5, 9, 10]  # each subject's last session this many days before today

# Facts told once: (date, subject line, what the user says, question, category).
FACTS = [
    ("2026-02-11", "the cat's teeth", "I took Miso the cat to the vet, Dr. Okafor, for a dental cleaning. It cost "
     "310 euros, more than I expected.", "What was the name of the vet who cleaned my cat's teeth?"),
    ("2026-04-23", "the bike", "The bike shop replaced the chain and the rear derailleur; the repair came to 145 "
     "euros.", "What did the bike shop replace on my bike?"),
    ("2026-05-30", "mum's birthday", "For my mother's birthday I bought a ceramic teapot from the Saturday market; "
     "she loved the blue glaze.", "What did I give my mother for her birthday?"),
    ("2026-01-19", "book club", "Book club met at Hannah's place and we discussed The Overstory; half of us did "
     "not finish it.", "Which book did the book club discuss at Hannah's?"),
    ("2026-03-02", "the car", "The mechanic said the brake pads need replacing at 62,000 kilometres, so around "
     "the summer.", "When do the brake pads on my car need replacing?"),
    ("2026-08-14", "the trip to Japan", "I booked the flights to Osaka for the trip to Japan; we fly on August 20 "
     "and stay in a ryokan called Hiiragiya in Kyoto.", "Where am I staying in Kyoto?"),
    ("2025-11-07", "the clinic", "At the clinic they found out I am allergic to penicillin, so I have to tell "
     "every doctor from now on.", "Which antibiotic am I allergic to?"),
    ("2026-10-04", "lentil soup", "My lentil soup finally works: cumin, smoked paprika, a bay leaf, and a squeeze "
     "of lemon at the very end.", "What spices go into my lentil soup?"),
    ("2026-06-21", "the fig tree", "The fiddle leaf fig keeps dropping leaves; the nursery said to water it every "
     "ten days and keep it away from the radiator.", "How often should I water the fiddle leaf fig?"),
    ("2026-07-09", "home insurance", "I switched the home insurance to Lindqvist Mutual; it costs 38 a month and "
     "covers the bikes too.", "Which company insures my home now?"),
    ("2026-09-12", "a concert", "Got two tickets for Nils Frahm at the Konzerthaus on November 3, row twelve.",
     "Which concert did I buy tickets for?"),
    ("2026-04-02", "taxes", "The tax return is filed; the refund should be 820 and arrive within six weeks.",
     "How big is my tax refund?"),
    ("2025-12-15", "the holiday party", "The office holiday party is at the boathouse restaurant and I volunteered "
     "to run the quiz.", "What did I volunteer to do at the holiday party?"),
    ("2026-11-21", "the boiler", "The boiler technician, a man called Ruud, bled the radiators and said the pump "
     "will last two more winters.", "What did the boiler technician say about the pump?"),
]
# Facts that change: (subject, [(date, what the user says)], question) -- the last one is the answer.
UPDATES = [
    ("my sister's wedding", [("2026-02-03", "My sister's wedding will be in Lisbon at a small chapel in May."),
                             ("2026-03-28", "Big news: my sister moved the wedding to Porto, at a vineyard, in "
                              "September.")], "Where is my sister's wedding taking place?"),
    ("the rent", [("2025-10-20", "The landlord confirmed the rent stays at 1,150 a month for now."),
                  ("2026-06-02", "The landlord raised the rent to 1,240 a month from July.")],
     "How much is my rent now?"),
    ("my manager", [("2025-11-25", "My manager Petra approved the training budget."),
                    ("2026-05-11", "Petra left the company, so Jonas is my manager now and he wants weekly "
                     "one-to-ones.")], "Who is my manager at work?"),
    ("the car loan", [("2026-01-08", "There are 18 payments left on the car loan."),
                      ("2026-09-30", "Only 9 payments left on the car loan after the extra payment.")],
     "How many payments are left on the car loan?"),
]
MULTI = [  # (question, [subject lines of FACTS / UPDATES])
    ("How much did I spend on the vet and the bike repair together?", ["the cat's teeth", "the bike"]),
    ("Does my rent or my home insurance cost more per month?", ["the rent", "home insurance"]),
    ("Is the Nils Frahm concert before or after my trip to Japan?", ["a concert", "the trip to Japan"]),
    ("What should every doctor know about me, and what did the clinic and the vet charge?",
     ["the clinic", "the cat's teeth"]),
    ("What did the mechanic and the boiler technician each tell me?", ["the car", "the boiler"]),
    ("Which came first, the tax refund or the wedding moving to Porto?", ["taxes", "my sister's wedding"]),
]
FILLER = [
    "It rained the whole weekend so I stayed in and cleaned the flat.",
    "Work was hectic, three meetings back to back and a deadline on Friday.",
    "I made pancakes this morning and they came out better than usual.",
    "My partner and I watched a documentary about octopuses last night.",
    "The train was late again, twenty minutes standing on the platform.",
    "I finally called my grandmother; she sounds well and sends her love.",
    "The neighbour's kid is learning the trumpet, which is a lot at seven in the morning.",
    "I have been sleeping badly, probably too much coffee after lunch.",
    "We had friends over for dinner and talked until midnight.",
    "I need to remember to renew my passport at some point.",
    "The supermarket changed its layout and nothing is where it used to be.",
    "I went for a walk along the canal; the light was beautiful.",
]
ASSISTANT = [
    "That sounds like a reasonable trade-off; what matters most to you here?",
    "It helps to write down the options with their costs side by side.",
    "You could try it for a month and see how it feels before committing.",
    "Good question. Would it help to break it into smaller steps?",
    "Many people in your situation start small and adjust as they go.",
]
CHOICE = ["I decided on {v}.", "Let's go with {v}.", "OK, final answer: {v}.", "We agreed on {v} in the end.",
          "I'm settling on {v}."]
TEMPORAL_FORMS = ["What did I decide about the {s} {t}?", "{T}, what did we settle on for the {s}?",
                  "What was the plan for the {s} that we discussed {t}?"]


@dataclass
class Session:
    path: str
    date: dt.date
    text: str
    subject: str


@dataclass
class Question:
    category: str
    question: str
    evidence: list[str] = field(default_factory=list)  # session paths


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _note(rng: random.Random, date: dt.date, subject: str, turns: list[str], style: int) -> tuple[str, str]:
    """(file name, Markdown) of one session: dated by front matter (style 0, 1), its title (2) or its file
    name only (3), like the notes ``ctx hook`` writes."""
    body_turns = list(turns)
    for _ in range(rng.randint(2, 4)):
        body_turns.insert(rng.randint(0, len(body_turns)), f"**User:** {rng.choice(FILLER)}")
        body_turns.insert(rng.randint(0, len(body_turns)), f"**Assistant:** {rng.choice(ASSISTANT)}")
    body = "\n\n".join(body_turns)
    slug = subject.replace(" ", "-").replace("'", "")
    if style == 3:
        return f"{date.isoformat()}-{slug}.md", f"# Chat: {subject}\n\n{body}\n"
    if style == 2:
        return f"chat-{slug}-{rng.randrange(10**6):06}.md", f"# Session {date.isoformat()}: {subject}\n\n{body}\n"
    return (f"chat-{slug}-{rng.randrange(10**6):06}.md",
            f"---\ndate: {date.isoformat()}\ntags: [session]\n---\n# Chat: {subject}\n\n{body}\n")


def build() -> tuple[list[Session], list[Question]]:
    """The sessions and the questions, from ``SEED``."""
    rng = random.Random(SEED)
    span = (TODAY - START).days
    sessions: list[Session] = []
    topic_sessions: dict[str, list[Session]] = {}
    for (subject, worry, values), recent in zip(TOPICS, RECENT, strict=True):
        days = sorted(rng.sample(range(0, span - 12), len(values) - 1)) + [span - recent]
        topic_sessions[subject] = []
        for i, (offset, value) in enumerate(zip(days, values, strict=True)):
            date = START + dt.timedelta(days=offset)
            aside = rng.choice([t[0] for t in TOPICS if t[0] != subject])
            turns = [f"**User:** I've been thinking about the {subject} again; {worry}.",
                     f"**Assistant:** Last time you were leaning towards {values[i - 1] if i else 'nothing yet'}. "
                     f"What changed about the {subject}?",
                     f"**User:** {rng.choice(CHOICE).format(v=value)}",
                     f"**Assistant:** Noted for the {subject}: {value}.",
                     f"**User:** Also, no news on the {aside} yet."]
            name, text = _note(rng, date, subject, turns, i % 4)
            session = Session(name, date, text, subject)
            sessions.append(session)
            topic_sessions[subject].append(session)
    by_subject: dict[str, list[Session]] = {}
    for i, (day, subject, said, _question) in enumerate(FACTS):
        turns = [f"**User:** Quick one about {subject}. {said}", "**Assistant:** Thanks, I'll remember that."]
        name, text = _note(rng, _date(day), subject, turns, i % 4)
        by_subject[subject] = [Session(name, _date(day), text, subject)]
    for j, (subject, changes, _question) in enumerate(UPDATES):
        by_subject[subject] = []
        for k, (day, said) in enumerate(changes):
            turns = [f"**User:** An update on {subject}: {said}", "**Assistant:** Got it, I've noted the change."]
            name, text = _note(rng, _date(day), subject, turns, (j + k) % 4)
            by_subject[subject].append(Session(name, _date(day), text, subject))
    for group in by_subject.values():
        sessions.extend(group)
    questions = [Question("single", q, [by_subject[s][0].path]) for _, s, _, q in FACTS]
    questions += [Question("update", q, [by_subject[s][-1].path]) for s, _, q in UPDATES]
    questions += [Question("update", f"What did I finally decide about the {s}?", [topic_sessions[s][-1].path])
                  for s, _, _ in TOPICS]
    questions += [Question("multi", q, [by_subject[s][-1].path for s in subjects]) for q, subjects in MULTI]
    questions += _temporal(rng, topic_sessions)
    trip = dt.date(2026, 8, 20)  # the flight FACTS tells of
    for subject in ("garden fence", "kitchen renovation", "novel"):
        before = [s for s in topic_sessions[subject] if s.date < trip]
        if before:
            questions.append(Question("anchored", f"What did I decide about the {subject} just before my trip to "
                                      "Japan?", [before[-1].path]))
    return sessions, questions


def _ranges(day: dt.date) -> list[tuple[str, dt.date, dt.date]]:
    """The time words a question can use for ``day`` (relative to ``TODAY``), with the days they span."""
    out = []
    ago = (TODAY - day).days
    if ago == 1:
        out.append(("yesterday", day, day))
    elif 2 <= ago <= 6:
        out.append((f"{NUMBERS[ago]} days ago", day, day))
    monday = TODAY - dt.timedelta(days=TODAY.weekday())
    if monday - dt.timedelta(days=7) <= day < monday:
        out.append(("last week", monday - dt.timedelta(days=7), monday - dt.timedelta(days=1)))
    first = TODAY.replace(day=1)
    last_month = (first - dt.timedelta(days=1)).replace(day=1)
    month_end = (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    if last_month <= day < first:
        out.append(("last month", last_month, first - dt.timedelta(days=1)))
    elif day.year == TODAY.year and day.month < TODAY.month:
        out.append((f"in {MONTHS[day.month - 1]}", day.replace(day=1), month_end))
    elif day.year < TODAY.year:
        out.append((f"in {MONTHS[day.month - 1]} {day.year}", day.replace(day=1), month_end))
        out.append((f"in {day.year}", dt.date(day.year, 1, 1), dt.date(day.year, 12, 31)))
    return out


def _temporal(rng: random.Random, topic_sessions: dict[str, list[Session]]) -> list[Question]:
    """Questions asking a subject of a time: the evidence is that subject's sessions in the time (at most
    two, else the question is not asked)."""
    out: list[Question] = []
    for subject, group in topic_sessions.items():
        for session in group:
            for words, first, last in _ranges(session.date):
                evidence = [s.path for s in group if first <= s.date <= last]
                if len(evidence) > 2:
                    continue
                form = rng.choice(TEMPORAL_FORMS)
                out.append(Question("temporal", form.format(s=subject, t=words, T=words[0].upper() + words[1:]),
                                    evidence))
    unique = {q.question: q for q in out}
    return sorted(unique.values(), key=lambda q: q.question)


def write(root: Path, sessions: list[Session]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for s in sessions:
        (root / s.path).write_text(s.text, encoding="utf-8")


async def measure(root: Path, sessions: list[Session], questions: list[Question], modes: list[str]) -> dict:
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness
    from context_harness.models import SearchRequest
    from context_harness.store.records import document_id

    write(root / "chats", sessions)
    provider = "local" if "hybrid" in modes or "semantic" in modes else "disabled"
    (root / "ctx.toml").write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "{provider}"\n'
                                   '[connectors.filesystem.chats]\nroot = "chats"\n', encoding="utf-8")
    out: dict = {}
    async with Harness.open(config_mod.load_file(root / "ctx.toml")) as h:
        await h.sync()  # embeds too (hybrid)
        for mode in modes:
            started = time.perf_counter()
            scores: dict[str, list[tuple[float, bool]]] = {}
            for q in questions:
                found = await h.search(SearchRequest(query=q.question, mode=mode, limit=5))  # type: ignore[arg-type]
                top = {r.id for r in found.results}
                wanted = {document_id("filesystem:chats", p) for p in q.evidence}
                share = len(wanted & top) / len(wanted)
                scores.setdefault(q.category, []).append((share, share == 1.0))
            out[mode] = _figures(scores) | {"seconds": round(time.perf_counter() - started, 2)}
    return out


def _figures(scores: dict[str, list[tuple[float, bool]]]) -> dict:
    every = [s for group in scores.values() for s in group if group is not scores.get("anchored")]
    out = {"recall@5": round(sum(s for s, _ in every) / len(every), 3),
           "all@5": round(sum(a for _, a in every) / len(every), 3), "questions": len(every)}
    for category, group in sorted(scores.items()):
        out[category] = {"recall@5": round(sum(s for s, _ in group) / len(group), 3),
                         "all@5": round(sum(a for _, a in group) / len(group), 3), "n": len(group)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="keyword,hybrid", help="comma-separated search modes")
    parser.add_argument("--questions", action="store_true", help="print the questions and their evidence")
    args = parser.parse_args()
    sessions, questions = build()
    if args.questions:
        dates = {s.path: s.date.isoformat() for s in sessions}
        print(json.dumps([{"category": q.category, "question": q.question,
                           "evidence": [f"{p} ({dates[p]})" for p in q.evidence]} for q in questions], indent=1))
        return
    os.environ["CTX_TODAY"] = TODAY.isoformat()  # relative dates in a question resolve against this day
    modes = [m for m in args.modes.split(",") if m]
    with tempfile.TemporaryDirectory() as tmp:
        figures = anyio.run(measure, Path(tmp), sessions, questions, modes)
    print(json.dumps({"benchmark": "conversation_memory", "today": TODAY.isoformat(), "sessions": len(sessions),
                      "questions": len(questions), **figures, "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()

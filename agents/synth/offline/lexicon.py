"""The offline generator's word lists (``lexicon.toml``: data, not code), loaded once, and the rule registry.

Every stage registers its rules with :func:`rule`; :func:`rules` lists a stage's rules in registration order, so a
test or a reader sees the whole pipeline (``concepts`` -> ``intents`` -> ``forms`` -> ``discourse`` -> ``checks``)
as a table of small named functions, each with one example in its docstring.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

_PATH = Path(__file__).with_name("lexicon.toml")
STAGES = ("concepts", "intents", "forms", "discourse", "checks")
_RULES: dict[str, list[Callable]] = {s: [] for s in STAGES}


def rule(stage: str) -> Callable[[Callable], Callable]:
    """Register a rule of ``stage`` (one of :data:`STAGES`); its docstring carries one example."""
    if stage not in _RULES:
        raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")

    def deco(fn: Callable) -> Callable:
        _RULES[stage].append(fn)
        return fn
    return deco


def rules(stage: str) -> list[Callable]:
    return list(_RULES[stage])


@dataclass(frozen=True)
class Intent:
    """What a passage offers about a concept and how a person with that need asks for it (``[intents.<name>]``)."""
    name: str
    cues: tuple[re.Pattern, ...]
    ents: frozenset[str]
    weight: float
    full: tuple[str, ...]
    pronoun: tuple[str, ...]
    ellipsis: tuple[str, ...]
    yesno_forms: frozenset[str]
    subject: bool = False          # the concept must be the sentence's subject
    needs_verb: bool = False       # the form asks with the sentence's verb ("How do I {V} {X}?")
    needs_clause: bool = False     # the form asks with the sentence's clause ("When {clause}?")
    needs_agent: bool = False      # the form asks for the passive's agent ("Who {active} {X}?")
    needs_other: bool = False      # the form names a second concept ("How does {X} compare to {Y}?")
    fallback: bool = False         # asked when nothing more specific is offered
    negated_ok: bool = False       # a negated sentence offers it too ("Funds cannot be used for ..." is a limit)
    about: str = "subject"         # which concept: the subject, else the one after / before the cue
    needs_number: bool = False     # the sentence states a number (a cost, a limit, a duration is one)
    anchor: str = ""               # the clause's verb has a date / a place complement ("opened in 1937")
    named_person: tuple[str, ...] = ()  # full forms for a named person ("Who is Ada Lovelace?")
    cue_named: tuple[str, ...] = ()     # full forms for a concept that the intent's own cue names
    cue_named_pronoun: tuple[str, ...] = ()
    now: bool = False              # a problem someone has: present tense, or told by a person ("my laptop failed")
    problem: bool = False          # asked of a problem: a concept naming one, or the subject said to be failing
    main_clause: bool = False      # said in the main clause (or a condition of it), of a concept of that clause

    def cue_names(self, text: str) -> bool:
        """The intent's own cue names the concept ``text``: "the annual fee" is a cost's concept and its cue."""
        return any(p.search(text) for p in self.cues if "{X}" not in p.pattern)


@dataclass(frozen=True)
class Lexicon:
    generic_heads: frozenset[str]
    edge_drop: frozenset[str]
    anaphors: frozenset[str]
    people_heads: frozenset[str]
    interface_verbs: frozenset[str]
    pointer_verbs: frozenset[str]
    open_words: frozenset[str]
    light_verbs: frozenset[str]
    people_intents: frozenset[str]
    named_intents: frozenset[str]
    irregular_past: dict[str, str]
    irregular_present: dict[str, str]
    recurring_date_words: frozenset[str]
    own_words: frozenset[str]
    linking_verbs: frozenset[str]
    calendar_words: frozenset[str]
    duration_units: frozenset[str]
    span_preps: frozenset[str]
    span_verbs: frozenset[str]
    span_counts: frozenset[str]
    problem_words: frozenset[str]
    failing: re.Pattern
    subordinate: frozenset[str]
    condition_marks: frozenset[str]
    currency_signs: frozenset[str]
    currency_words: frozenset[str]
    intents: dict[str, Intent]


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon, parsed and compiled once per process."""
    data = tomllib.loads(_PATH.read_text(encoding="utf-8"))
    intents = {}
    for name, d in data["intents"].items():
        intents[name] = Intent(
            name=name, cues=tuple(re.compile(c, re.IGNORECASE) for c in d.get("cues", [])),
            ents=frozenset(d.get("ents", [])), weight=float(d.get("weight", 1.0)), full=tuple(d["full"]),
            pronoun=tuple(d.get("pronoun", [])), ellipsis=tuple(d.get("ellipsis", [])),
            yesno_forms=frozenset(d.get("yesno_forms", [])), subject=bool(d.get("subject")),
            needs_verb=bool(d.get("needs_verb")), needs_clause=bool(d.get("needs_clause")),
            needs_agent=bool(d.get("needs_agent")), needs_other=bool(d.get("needs_other")),
            fallback=bool(d.get("fallback")), negated_ok=bool(d.get("negated_ok")),
            about=d.get("about", "subject"), needs_number=bool(d.get("needs_number")), anchor=d.get("anchor", ""),
            now=bool(d.get("now")), problem=bool(d.get("problem")), main_clause=bool(d.get("main_clause")),
            named_person=tuple(d.get("named_person", [])), cue_named=tuple(d.get("cue_named", [])),
            cue_named_pronoun=tuple(d.get("cue_named_pronoun", [])))
    return Lexicon(generic_heads=frozenset(data["generic_heads"]), edge_drop=frozenset(data["phrase_edge_drop"]),
                   anaphors=frozenset(data["anaphors"]),
                   people_heads=frozenset(data["people_heads"]), people_intents=frozenset(data["people_intents"]),
                   named_intents=frozenset(data["named_intents"]),
                   interface_verbs=frozenset(data["interface_verbs"]), pointer_verbs=frozenset(data["pointer_verbs"]),
                   open_words=frozenset(data["open_words"]), light_verbs=frozenset(data["light_verbs"]),
                   irregular_past=dict(data["irregular_past"]), irregular_present=dict(data["irregular_present"]),
                   recurring_date_words=frozenset(data["recurring_date_words"]),
                   own_words=frozenset(data["own_words"]), linking_verbs=frozenset(data["linking_verbs"]),
                   calendar_words=frozenset(data["calendar_words"]),
                   duration_units=frozenset(data["duration_units"]),
                   span_preps=frozenset(data["span_preps"]), span_verbs=frozenset(data["span_verbs"]),
                   span_counts=frozenset(data["span_counts"]),
                   problem_words=frozenset(data["problem_words"]),
                   failing=re.compile(data["failing"], re.IGNORECASE),
                   subordinate=frozenset(data["subordinate"]), condition_marks=frozenset(data["condition_marks"]),
                   currency_signs=frozenset(data["currency_signs"]), currency_words=frozenset(data["currency_words"]),
                   intents=intents)

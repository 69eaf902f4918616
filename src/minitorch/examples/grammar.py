"""The English verb grammar grid behind ``minitorch demo``: verbs x persons x tenses.

Every cell is a verb (``"eat"``), a person (``I``, ``you``, ``he/she``) and a tense (present,
past, future, present perfect, past perfect) with its conjugated phrase (``"he has eaten"``).
The demo's classifier reads a cell's verb, person and *form* and must name the tense.

What makes the tense identifiable from the form, and what the features encode:

* the auxiliary words before the main verb: ``will`` (future), ``has``/``have`` (present
  perfect), ``had`` (past perfect); none in the simple present and past;
* how the main verb relates to its dictionary form: the base form itself (``I go``), the
  third-person ``-s`` form (``he goes``), or neither (``went``, ``walked``, ``eaten``);
* common endings of the main verb: ``-s``, ``-ed``, ``-en``, ``-n``, ``-t``, ``-ght``;
* the main verb's word identity, from a vocabulary of the *training* verbs only: a
  held-out irregular form such as ``swam`` is an unknown word, so held-out verbs are
  classified through the auxiliaries, the relation to the base form and the endings.

Verbs whose past equals their base form (``put``, ``cut``, ``hit``, ``read``) are left out:
``I put`` is present or past and no form feature can tell which.

Examples
--------
>>> conjugate(VERBS[0], "he/she", "present perfect")
'he has walked'
>>> grid = build_grid()
>>> len(grid) == len(VERBS) * len(PERSONS) * len(TENSES)
True
>>> grid[0]
Cell(verb='walk', person='I', tense='present', phrase='I walk')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

__all__ = [
    "HELD_OUT",
    "PERSONS",
    "SUFFIXES",
    "TENSES",
    "VERBS",
    "Cell",
    "Dataset",
    "Verb",
    "build_dataset",
    "build_grid",
    "conjugate",
]

TENSES = ("present", "past", "future", "present perfect", "past perfect")
"""The five classes, in logit order."""

PERSONS = ("I", "you", "he/she")
"""Grammatical persons; the third person is written ``he`` in the phrases."""

_SUBJECT = {"I": "I", "you": "you", "he/she": "he"}


@dataclasses.dataclass(frozen=True)
class Verb:
    """A verb's principal parts: base, third-person present, past, past participle."""

    base: str
    third: str
    past: str
    participle: str

    @property
    def regular(self) -> bool:
        """Whether past and participle are the ``-ed``/``-d`` form."""
        return self.past == self.participle and self.past.endswith("ed")


def _v(base: str, third: str, past: str, participle: str | None = None) -> Verb:
    return Verb(base, third, past, participle or past)


VERBS: tuple[Verb, ...] = (
    # regular verbs (-ed / -d / -ied, consonant doubling)
    _v("walk", "walks", "walked"),
    _v("talk", "talks", "talked"),
    _v("play", "plays", "played"),
    _v("jump", "jumps", "jumped"),
    _v("cook", "cooks", "cooked"),
    _v("clean", "cleans", "cleaned"),
    _v("open", "opens", "opened"),
    _v("help", "helps", "helped"),
    _v("watch", "watches", "watched"),
    _v("wash", "washes", "washed"),
    _v("call", "calls", "called"),
    _v("ask", "asks", "asked"),
    _v("work", "works", "worked"),
    _v("visit", "visits", "visited"),
    _v("start", "starts", "started"),
    _v("finish", "finishes", "finished"),
    _v("live", "lives", "lived"),
    _v("love", "loves", "loved"),
    _v("dance", "dances", "danced"),
    _v("move", "moves", "moved"),
    _v("study", "studies", "studied"),
    _v("carry", "carries", "carried"),
    _v("try", "tries", "tried"),
    _v("stop", "stops", "stopped"),
    _v("plan", "plans", "planned"),
    _v("climb", "climbs", "climbed"),
    _v("paint", "paints", "painted"),
    _v("listen", "listens", "listened"),
    # irregular verbs
    _v("go", "goes", "went", "gone"),
    _v("eat", "eats", "ate", "eaten"),
    _v("see", "sees", "saw", "seen"),
    _v("take", "takes", "took", "taken"),
    _v("give", "gives", "gave", "given"),
    _v("write", "writes", "wrote", "written"),
    _v("speak", "speaks", "spoke", "spoken"),
    _v("drive", "drives", "drove", "driven"),
    _v("break", "breaks", "broke", "broken"),
    _v("choose", "chooses", "chose", "chosen"),
    _v("forget", "forgets", "forgot", "forgotten"),
    _v("fall", "falls", "fell", "fallen"),
    _v("know", "knows", "knew", "known"),
    _v("grow", "grows", "grew", "grown"),
    _v("fly", "flies", "flew", "flown"),
    _v("draw", "draws", "drew", "drawn"),
    _v("run", "runs", "ran", "run"),
    _v("come", "comes", "came", "come"),
    _v("swim", "swims", "swam", "swum"),
    _v("sing", "sings", "sang", "sung"),
    _v("drink", "drinks", "drank", "drunk"),
    _v("begin", "begins", "began", "begun"),
    _v("do", "does", "did", "done"),
    _v("have", "has", "had"),
    _v("make", "makes", "made"),
    _v("buy", "buys", "bought"),
    _v("think", "thinks", "thought"),
    _v("teach", "teaches", "taught"),
    _v("catch", "catches", "caught"),
    _v("bring", "brings", "brought"),
    _v("sleep", "sleeps", "slept"),
    _v("keep", "keeps", "kept"),
    _v("feel", "feels", "felt"),
    _v("leave", "leaves", "left"),
    _v("build", "builds", "built"),
    _v("find", "finds", "found"),
    _v("tell", "tells", "told"),
    _v("sell", "sells", "sold"),
    _v("stand", "stands", "stood"),
    _v("win", "wins", "won"),
    _v("sit", "sits", "sat"),
    _v("meet", "meets", "met"),
)
"""70 verbs: 28 regular, 42 irregular."""

HELD_OUT: tuple[str, ...] = (
    # regular
    "clean",
    "wash",
    "finish",
    "dance",
    "study",
    "stop",
    "listen",
    # irregular
    "go",
    "write",
    "choose",
    "know",
    "swim",
    "begin",
    "have",
    "teach",
    "sleep",
    "sit",
    "build",
)
"""Verbs never seen in training (about a quarter, 7 regular and 11 irregular): validation."""

SUFFIXES = ("s", "ed", "en", "n", "t", "ght")
"""Endings of the main verb that are features."""

AUXILIARIES = ("will", "has", "have", "had")
"""Auxiliary words that are features (the words between the subject and the main verb)."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of the grid: verb, person, tense and the conjugated phrase."""

    verb: str
    person: str
    tense: str
    phrase: str


def conjugate(verb: Verb, person: str, tense: str) -> str:
    """The phrase for ``verb`` in ``person`` and ``tense``, e.g. ``"I had walked"``.

    Parameters
    ----------
    verb : Verb
        The verb's principal parts.
    person : str
        One of :data:`PERSONS`.
    tense : str
        One of :data:`TENSES`.

    Returns
    -------
    str
        Subject, auxiliaries and main verb separated by single spaces.

    Examples
    --------
    >>> go = Verb("go", "goes", "went", "gone")
    >>> [conjugate(go, "he/she", t) for t in TENSES]
    ['he goes', 'he went', 'he will go', 'he has gone', 'he had gone']
    """
    if person not in _SUBJECT:
        raise ValueError(f"conjugate: person must be one of {PERSONS}, got {person!r}")
    third = person == "he/she"
    words = {
        "present": [verb.third if third else verb.base],
        "past": [verb.past],
        "future": ["will", verb.base],
        "present perfect": ["has" if third else "have", verb.participle],
        "past perfect": ["had", verb.participle],
    }.get(tense)
    if words is None:
        raise ValueError(f"conjugate: tense must be one of {TENSES}, got {tense!r}")
    return " ".join([_SUBJECT[person], *words])


def build_grid(verbs: Sequence[Verb] = VERBS) -> list[Cell]:
    """Every (verb, person, tense) cell, in verb, person, tense order.

    Examples
    --------
    >>> [c.phrase for c in build_grid(VERBS[:1])][:5]
    ['I walk', 'I walked', 'I will walk', 'I have walked', 'I had walked']
    """
    return [Cell(v.base, p, t, conjugate(v, p, t)) for v in verbs for p in PERSONS for t in TENSES]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """The grid as feature matrices (NumPy, float64) and tense labels (int64).

    Attributes
    ----------
    x_train, y_train, x_val, y_val : numpy.ndarray
        Features ``(n, n_features)`` and tense indices ``(n,)``.
    cells_train, cells_val : tuple of Cell
        The cells behind each row.
    feature_names : tuple of str
        One name per feature column.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    cells_train: tuple[Cell, ...]
    cells_val: tuple[Cell, ...]
    feature_names: tuple[str, ...]

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def baseline(self) -> tuple[str, float]:
        """The majority-class baseline: the most common training tense and its validation
        accuracy (ties go to the first tense in :data:`TENSES`)."""
        counts = np.bincount(self.y_train, minlength=len(TENSES))
        majority = int(np.argmax(counts))
        return TENSES[majority], float(np.mean(self.y_val == majority))


def _features(
    cell: Cell, verb: Verb, verb_index: dict[str, int], vocab: dict[str, int]
) -> np.ndarray:
    words = cell.phrase.split(" ")
    aux, main = words[1:-1], words[-1]
    word = np.zeros(len(vocab))
    if main in vocab:  # a word never seen in training (a held-out form) stays all zero
        word[vocab[main]] = 1.0
    parts = [
        np.eye(len(verb_index))[verb_index[cell.verb]],
        np.eye(len(PERSONS))[PERSONS.index(cell.person)],
        [float(a in aux) for a in AUXILIARIES],
        [float(main == verb.base), float(main == verb.third)],
        [float(main.endswith(s)) for s in SUFFIXES],
        word,
    ]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def build_dataset(verbs: Sequence[Verb] = VERBS, held_out: Sequence[str] = HELD_OUT) -> Dataset:
    """Features and labels of the grid, split into training and held-out verbs.

    The input of a cell is ``one-hot(verb) ⊕ one-hot(person) ⊕ form features``; the form
    features are the auxiliaries, the main verb's relation to its base form, its
    endings and its word identity in the training vocabulary (see the module docstring).

    Examples
    --------
    >>> data = build_dataset()
    >>> data.x_train.shape[1] == data.x_val.shape[1] == data.n_features
    True
    >>> sorted({c.verb for c in data.cells_val}) == sorted(HELD_OUT)
    True
    >>> data.baseline()
    ('present', 0.2)
    """
    by_base = {v.base: v for v in verbs}
    unknown = sorted(set(held_out) - set(by_base))
    if unknown:
        raise ValueError(f"build_dataset: held-out verbs {unknown} are not in the verb list")
    grid = build_grid(verbs)
    train = [c for c in grid if c.verb not in held_out]
    val = [c for c in grid if c.verb in held_out]
    verb_index = {v.base: i for i, v in enumerate(verbs)}
    words = sorted({c.phrase.split(" ")[-1] for c in train})
    vocab = {w: i for i, w in enumerate(words)}
    names = (
        [f"verb={v.base}" for v in verbs]
        + [f"person={p}" for p in PERSONS]
        + [f"aux={a}" for a in AUXILIARIES]
        + ["main=base form", "main=3rd person -s form"]
        + [f"ends with -{s}" for s in SUFFIXES]
        + [f"word={w}" for w in words]
    )

    def encode(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
        x = np.stack([_features(c, by_base[c.verb], verb_index, vocab) for c in cells])
        y = np.array([TENSES.index(c.tense) for c in cells], dtype=np.int64)
        return x, y

    x_train, y_train = encode(train)
    x_val, y_val = encode(val)
    return Dataset(x_train, y_train, x_val, y_val, tuple(train), tuple(val), tuple(names))

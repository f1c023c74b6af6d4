"""One meaning per letter (issue 41, item 3): every symbol in the maths of the lessons and lab masters is declared,
and no symbol is declared with two meanings.

A symbol is a Latin or Greek letter with its subscript ($t_\\text{F}$, $k_E$, $N_\\text{nodes}$; superscripts and
upright words in \\text{} are not symbols). The maths is every $...$ and $$...$$ of the markdown cells of the py:percent
twins (notebooks_py/NN_*.py, labs/NN_name/NN_name.py). A symbol is declared in the course map's notation table, in a
glossary symbol entry (course_lib.glossary_entries) or in a table of the notebook itself whose first column is headed
"Symbol" (its *Variables* table); a parenthesis that quotes a paper's own letter ("$D$ (Eq. 4 writes $T$)") declares
nothing. Two declarations of one symbol mean the same when their code names (the backticked names, last dotted part)
share one, and a code name the course map writes with a symbol is written with that symbol everywhere. The letters
the sources use for two things (the course map's notation note) are checked by name.

Every notation check of the course is here: also that the glossary defines each symbol of the course map, that a
"Symbol | Meaning" table agrees with the glossary's definition, and that the prose makes a symbol count one thing
("$k$ chunks" everywhere, never "$k$ buckets").
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from course_lib import glossary_entries as glossary

ROOT = Path(__file__).resolve().parents[1]
COURSE_MAP = "notebooks_py/00_course_map.py"

MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.DOTALL)
GREEK = (
    "alpha|beta|gamma|delta|epsilon|zeta|eta|theta|kappa|lambda|mu|nu|xi|pi|rho|sigma|tau|phi|chi|psi|omega|"
    "Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma|Phi|Psi|Omega"
)
# A subscript: \text{...} (or \mathrm), a braced group, or one character.
SUBSCRIPT = r"_(?:\\(?:text|mathrm)\{[^{}]*\}|\\[A-Za-z]+|\{(?:[^{}]|\{[^{}]*\})*\}|[A-Za-z0-9])"
SYMBOL = re.compile(r"(?<![\\A-Za-z])([A-Za-z]|\\(?:" + GREEK + r")(?![A-Za-z]))(" + SUBSCRIPT + ")?")
# Upright words and superscripts are not symbols; \text{} right after "_" is a subscript, kept.
UPRIGHT = re.compile(r"(?<!_)\\(?:text|mathrm|operatorname|textbf|mathbf)\{[^{}]*\}")
ORPHAN_SUBSCRIPT = re.compile(r"(?<![A-Za-z0-9])" + SUBSCRIPT)
SUPERSCRIPT = re.compile(r"\^(?:\\(?:text|mathrm)\{[^{}]*\}|\{[^{}]*\}|\\[A-Za-z]+|[A-Za-z0-9*])")
COMMAND = re.compile(r"\\[A-Za-z]+")
CODE = re.compile(r"`([^`]+)`")
ALIASES = re.compile(r"\(or [^()]*\)")  # "$\\Psi$ (or $P$)": a second form of the same symbol
PAPER_LETTER = re.compile(r"\([^()]*\bwrites\b[^()]*\)")  # "(Eq. 4 writes $T$)": the paper's letter, not ours

# The letters that had two meanings (issue 41), as the course map's notation note settles them: the quantity (code
# name) -> its one symbol. Declaring one of these quantities under another symbol fails.
ONE_SYMBOL = {
    "peak_flops_per_s": "R",
    "memory_bandwidth_bytes_per_s": "B_HBM",
    "devices_per_node": "G",
    "DOUBLE_BINARY_TREE_CHUNKS": "k",
    "forward_time_s": "t_F",
    "backward_time_s": "t_bwd",
    "backward_input_time_s": "t_B",
    "backward_weight_time_s": "t_W",
    "worst_slowdown": "\\Lambda",
    "ffn_hidden": "h_ffn",
}
# ... and the letters no maths may use bare any more, with what replaced them.
RETIRED = {
    "g": "GPUs per node are $G$; Megatron-LM's f and g are operator names, in bold prose, not maths",
    "f": "the MLP's inner width is $h_\\text{ffn}$; Megatron-LM's f is an operator name, in bold prose",
    "W": "HBM bandwidth is $B_\\text{HBM}$; the weight-gradient pass is the label W ($t_\\text{W}$, $M_\\text{W}$)",
    "t_{f}": "the forward of a micro-batch is $t_\\text{F}$",
    "t_{b}": "a whole backward is $t_\\text{bwd} = t_\\text{B} + t_\\text{W}$",
}
# ... and the second meanings a declared letter could still be used with, found in the prose around it.
MISUSES = {
    "k": (
        re.compile(r"\$k\$\s+(?:[a-z-]+\s+)?(?:GPU|device)s?\b|(?:GPU|device)s?\s+(?:per node\s+)?\$k\$"),
        "$k$ counts the chunks of a pipelined tree; GPUs per node are $G$",
    ),
    "T": (
        re.compile(r"\$T\$\s+(?:[a-z-]+\s+)?tokens?\b|tokens?\s+\$T\$"),
        "$T$ is a time; tokens are $D$ or $n_\\text{tok}$",
    ),
    "R": (
        re.compile(r"\$[^$]*(?<![\\A-Za-z])R\s*\([^$]*\$"),
        "$R$ is the peak FLOP rate, not a function; the worst slowdown is $\\Lambda(x)$",
    ),
    "B": (
        re.compile(r"input[- ]gradient[^.$]{0,40}\$B\$|\$B\$[^.$]{0,40}input[- ]gradient"),
        "$B$ is a bandwidth; the input-gradient pass is the label B ($t_\\text{B}$)",
    ),
}
# Symbols used bare with the meaning the course map gives them (the other meanings got other symbols).
CANONICAL_CODE = {"R": "peak_flops_per_s", "B": "bandwidth_bytes_per_s", "k": "DOUBLE_BINARY_TREE_CHUNKS"}


def normalise(symbol: str) -> str:
    """One spelling per symbol, which keeps an upright subscript (a label: 't_\\text{F}' -> 't_F') apart from an
    italic one (a variable: 't_F' -> 't_{F}'), without braces or spaces.

    >>> normalise(r"t_\\text{F}"), normalise("t_F"), normalise(r"N_{\\text{dp}}"), normalise(r"d_{\\ge 1}")
    ('t_F', 't_{F}', 'N_dp', 'd_{\\\\ge1}')
    """
    base, _, sub = symbol.partition("_")
    upright = re.search(r"\\(?:text|mathrm)\{", sub) is not None
    sub = re.sub(r"\\(?:text|mathrm)\{([^{}]*)\}", r"\1", sub)
    sub = re.sub(r"[{}\s~]|\\[,;! ]", "", sub)
    if not sub:
        return base
    return f"{base}_{sub}" if upright else f"{base}_{{{sub}}}"


def symbols_in(math: str) -> list[str]:
    """The symbols of one formula, normalised, in order.

    >>> symbols_in(r"T_\\text{hier} = T_\\text{RS}^\\text{NVLink}(G, S) + 2\\ \\text{bytes}")
    ['T_hier', 'T_RS', 'G', 'S']
    """
    body = UPRIGHT.sub(" ", math)
    body = ORPHAN_SUBSCRIPT.sub(" ", body)  # \\text{bubble}_\\text{ZB-H1}: a word's subscript is a word
    body = SUPERSCRIPT.sub(" ", body)
    found = []
    for match in SYMBOL.finditer(body):
        found.append(normalise(match.group(0)))
    return found


def markdown_cells(text: str) -> list[str]:
    """The markdown cells of a py:percent twin, without the comment marks."""
    cells, cell = [], None
    for line in text.splitlines():
        if line.startswith("# %% [markdown]"):
            cell = []
            cells.append(cell)
        elif line.startswith("# %%"):
            cell = None
        elif cell is not None and line.startswith("#"):
            cell.append(line[2:] if line.startswith("# ") else line[1:])
    return ["\n".join(cell) for cell in cells]


def maths(cell: str) -> list[str]:
    """The formulas of a markdown cell (inline code, which may hold a $, removed first)."""
    cell = re.sub(r"`[^`\n]*`", " ", cell)
    return [m.group(1) or m.group(2) for m in MATH.finditer(cell)]


def twins() -> list[str]:
    """The py:percent twins of every lesson and lab master, relative to the repository."""
    lessons = sorted(ROOT.glob("notebooks_py/[0-9][0-9]_*.py"))
    labs = [p for p in sorted(ROOT.glob("labs/[0-9][0-9]_*/[0-9][0-9]_*.py")) if p.stem == p.parent.name]
    return [str(path.relative_to(ROOT)) for path in lessons + labs]


@dataclass(frozen=True)
class Declaration:
    symbol: str
    code_names: frozenset[str]
    where: str


def code_names(text: str) -> list[str]:
    """The code names of a table cell or glossary field, in order: each backticked (or comma-separated) name, its
    last dotted part."""
    names = CODE.findall(text) or [text]
    parts = [part.strip().rstrip("()").split(".")[-1] for name in names for part in name.split(",")]
    return [part for part in dict.fromkeys(parts) if re.fullmatch(r"\w+", part)]


def formula_symbols(text: str) -> list[str]:
    """The symbols of the maths in a table cell or glossary term; a function's argument is not what the row declares
    ("$\\Lambda(x)$" declares \\Lambda)."""
    return [s for formula in maths(text) for s in symbols_in(re.sub(r"\([^()]*\)", " ", formula))]


def declare(first_column: str, names: list[str], where: str) -> list[Declaration]:
    """The declarations of a table row's first column (or a glossary term) with its code names: the n-th code name goes
    with the n-th symbol when there are as many of each ("$G$, $N_\\text{nodes}$ | `devices_per_node`, `nodes`"), else
    every symbol has them all; a second form in "(or ...)" means what the symbol before it means; a paper's letter
    ("(Eq. 4 writes $T$)") declares nothing."""
    column = PAPER_LETTER.sub(" ", first_column)
    alias_text = " ".join(ALIASES.findall(column))
    symbols = formula_symbols(ALIASES.sub(" ", column))
    if len(symbols) == len(names):
        found = [Declaration(s, frozenset([n]), where) for s, n in zip(symbols, names, strict=True)]
    else:
        found = [Declaration(s, frozenset(names), where) for s in symbols]
    aliased = frozenset().union(*(d.code_names for d in found)) if found else frozenset(names)
    return found + [Declaration(s, aliased, where) for s in formula_symbols(alias_text)]


def table_rows(cell: str, header: str) -> list[list[str]]:
    """The rows (their columns) of a cell's markdown tables whose first two header columns are ``header``'s, lower
    case ("symbol" matches any table whose first column is headed Symbol; "symbol|meaning" only those whose second
    is headed Meaning)."""
    wanted = header.split("|")
    rows, in_table = [], False
    for line in cell.splitlines():
        row = line.strip()
        if not row.startswith("|"):
            in_table = False
            continue
        columns = [column.strip() for column in row.strip("|").split("|")]
        if columns[0].lower() == "symbol":
            in_table = [column.lower() for column in columns[: len(wanted)]] == wanted
            continue
        if in_table and not set(columns[0]) <= set("-: "):
            rows.append(columns)
    return rows


def table_declarations(cell: str, where: str) -> list[Declaration]:
    """The symbols a cell's tables headed "Symbol" declare: each row's first column, with its code names."""
    return [
        declaration
        for columns in table_rows(cell, "symbol")
        for declaration in declare(columns[0], code_names(columns[1]) if len(columns) > 1 else [], where)
    ]


def read(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


@cache
def course_declarations() -> tuple[Declaration, ...]:
    """The course-wide declarations: the course map's notation table and the glossary's symbol entries."""
    found = [d for cell in markdown_cells(read(COURSE_MAP)) for d in table_declarations(cell, "course map")]
    for entry in glossary.ENTRIES:
        if entry.kind != "symbol":
            continue
        found += declare(entry.term, code_names(entry.code_name or ""), f"glossary #{entry.anchor}")
    return tuple(found)


def clashes(declaration: Declaration, others: list[Declaration]) -> list[str]:
    """How ``declaration`` disagrees with the course-wide declarations of its symbol (it must share a code name with
    one of them: $p$ has two, the one exception), or, for a symbol the course map and glossary do not declare, with
    ``others``; and whether it gives a settled quantity (ONE_SYMBOL) another symbol."""
    if not declaration.code_names:
        return []
    found = []
    course = [d for d in course_declarations() if d.symbol == declaration.symbol and d.code_names]
    rivals = course or [d for d in others if d.symbol == declaration.symbol and d.code_names]
    if rivals and not declaration.code_names & frozenset().union(*(d.code_names for d in rivals)):
        elsewhere = "; ".join(f"{d.where}: {sorted(d.code_names)}" for d in rivals)
        found.append(
            f"{declaration.where}: ${declaration.symbol}$ declared as {sorted(declaration.code_names)}, "
            f"elsewhere as {elsewhere}"
        )
    if len(declaration.code_names) == 1:
        (name,) = declaration.code_names
        if ONE_SYMBOL.get(name, declaration.symbol) != declaration.symbol:
            found.append(
                f"{declaration.where}: ${declaration.symbol}$ declared as `{name}`, "
                f"whose symbol is ${ONE_SYMBOL[name]}$"
            )
        elif declaration.symbol not in course_map_symbols().get(name, {declaration.symbol}):
            found.append(
                f"{declaration.where}: ${declaration.symbol}$ declared as `{name}`, which the course map's notation "
                f"table writes {' or '.join(f'${s}$' for s in sorted(course_map_symbols()[name]))}"
            )
    return found


@cache
def course_map_symbols() -> dict[str, frozenset[str]]:
    """Each code name the course map's notation table pairs with one symbol (a row of as many symbols as code names),
    with the symbols it is written as."""
    found: dict[str, set[str]] = defaultdict(set)
    for declaration in course_declarations():
        if declaration.where == "course map" and len(declaration.code_names) == 1:
            found[next(iter(declaration.code_names))].add(declaration.symbol)
    return {name: frozenset(symbols) for name, symbols in found.items()}


def problems(path: str, text: str) -> list[str]:
    """Everything wrong with the notation of one twin: undeclared symbols, retired letters, a symbol declared with
    another meaning than elsewhere, one of the settled quantities under another symbol."""
    cells = markdown_cells(text)
    own = [d for cell in cells for d in table_declarations(cell, path)]
    declared: dict[str, list[Declaration]] = defaultdict(list)
    for declaration in [*course_declarations(), *own]:
        declared[declaration.symbol].append(declaration)
    found = []
    used = {s for cell in cells for formula in maths(cell) for s in symbols_in(formula)}
    for symbol in sorted(used):
        if symbol in RETIRED:
            found.append(f"{path}: ${symbol}$ is retired: {RETIRED[symbol]}")
        elif symbol not in declared:
            found.append(
                f"{path}: ${symbol}$ is used in the maths but declared nowhere (add it to the course map's notation "
                "table, a glossary symbol entry, or this notebook's Variables table)"
            )
    found += [clash for declaration in own for clash in clashes(declaration, own)]
    for letter, (pattern, meaning) in MISUSES.items():
        found += [
            f"{path}: ${letter}$ with a second meaning, {m.group(0)!r}: {meaning}"
            for m in pattern.finditer("\n".join(cells))
        ]
    return found


@pytest.mark.parametrize("path", twins())
def test_every_symbol_is_declared_with_one_meaning(path):
    assert problems(path, read(path)) == []


def test_no_symbol_has_two_meanings_across_the_notebooks():
    own = [d for path in twins() for cell in markdown_cells(read(path)) for d in table_declarations(cell, path)]
    assert [clash for declaration in own for clash in clashes(declaration, own)] == []


# $p$ is the one symbol the course map declares twice (ranks of a collective, pipeline stages; its notation note).
SHARED = {"p"}


def test_the_course_wide_declarations_agree():
    by_symbol: dict[str, list[Declaration]] = defaultdict(list)
    for declaration in course_declarations():
        by_symbol[declaration.symbol].append(declaration)
    clashes = [
        (symbol, a.where, sorted(a.code_names), b.where, sorted(b.code_names))
        for symbol, declarations in by_symbol.items()
        if symbol not in SHARED
        for a in declarations
        for b in declarations
        if a.code_names and b.code_names and not (a.code_names & b.code_names)
    ]
    assert clashes == []
    for name, symbol in ONE_SYMBOL.items():
        holders = {d.symbol for d in course_declarations() if name in d.code_names}
        assert holders <= {symbol}, f"`{name}` is declared as {sorted(holders)}, not only ${symbol}$"
    for symbol, name in CANONICAL_CODE.items():
        assert all(name in d.code_names for d in by_symbol[symbol]), (symbol, by_symbol[symbol])
    assert not set(RETIRED) & set(by_symbol), "a retired letter is declared in the course map or the glossary"


def test_the_eight_letters_have_their_settled_symbols():
    # The course map's table declares each settled quantity under its one symbol.
    table = {d.symbol: d.code_names for d in course_declarations() if d.where == "course map"}
    for name, symbol in ONE_SYMBOL.items():
        if name not in ("worst_slowdown", "ffn_hidden"):  # lesson 09's own, in its Variables table
            assert name in table.get(symbol, ()), f"the course map's notation table has no ${symbol}$ = `{name}`"
    lesson_09 = [
        d for cell in markdown_cells(read("notebooks_py/09_capstone.py")) for d in table_declarations(cell, "")
    ]
    assert {("\\Lambda", "worst_slowdown"), ("h_ffn", "ffn_hidden")} <= {
        (d.symbol, name) for d in lesson_09 for name in d.code_names
    }


def test_the_glossary_defines_every_symbol_of_the_course_map():
    glossary_defined = {d.symbol for d in course_declarations() if d.where.startswith("glossary")}
    missing = sorted({d.symbol for d in course_declarations() if d.where == "course map"} - glossary_defined)
    assert missing == [], (
        f"the course map's notation table has {missing}, which course_lib/glossary_entries.py does not define: add them"
    )


def glossary_symbols() -> dict[str, glossary.Entry]:
    """Each symbol the glossary defines, as its term writes it ("k", "N_\\text{rails}"), with its entry."""
    return {
        symbol.strip(): entry
        for entry in glossary.ENTRIES
        if entry.kind == "symbol"
        for piece in MATH.findall(entry.term)
        for symbol in "".join(piece).split(",")
    }


WORD = re.compile(r"[a-z]{3,}")
# Words too common to say that two meanings agree.
COMMON = {"the", "and", "for", "one", "per", "each", "every", "with", "that", "this", "from", "its", "are", "not"}


@pytest.mark.parametrize("path", twins())
def test_meaning_tables_agree_with_the_glossary(path):
    """A "Symbol | Meaning" table (no code names) gives each symbol the glossary defines a meaning that shares a word
    with the glossary's definition ($k$, "gradient buckets", against "chunks a pipelined tree cuts the buffer
    into", does not)."""
    entries, found = glossary_symbols(), []
    for index, cell in enumerate(markdown_cells(read(path))):
        for columns in table_rows(cell, "symbol|meaning"):
            meaning = columns[1] if len(columns) > 1 else ""
            symbols = [symbol.strip() for piece in MATH.findall(columns[0]) for symbol in "".join(piece).split(",")]
            for symbol, entry in [(symbol, entries[symbol]) for symbol in symbols if symbol in entries]:
                shared = set(WORD.findall(meaning.lower())) & set(WORD.findall(entry.definition.lower()))
                if not shared - COMMON:
                    found.append(
                        f"{path}, markdown cell {index}: ${symbol}$ is {meaning!r} here, but the glossary defines it "
                        f"as {entry.definition!r}; use another symbol, or say the same thing"
                    )
    assert found == []


# A symbol's meaning as the prose gives it: the thing it counts ("$k$ chunks", "$n$ latency-bearing steps", "ranks
# $n$", "rank count $n$"), one of these nouns, or "index" where it numbers one of them ("rank $r$", "stage $k$"); a
# variable table's row reads the same way ("| $k$ | gradient buckets |").
PROSE_SYMBOL = r"\$(\\?[A-Za-z]+(?:_(?:\w|\{[^{}$]*\}|\\text\{[^{}$]*\}))?)\$"
NOUNS = (
    "rank",
    "chunk",
    "bucket",
    "micro-batch",
    "rail",
    "phase",
    "step",
    "stage",
    "layer",
    "node",
    "GPU",
    "device",
    "head",
    "replica",
    "expert",
)
NOUN = r"(" + "|".join(NOUNS) + r")"
# At most one word between a symbol and the noun it counts, not a word that starts a new phrase.
FILLER = r"(?:(?!(?:and|or|of|per|for|the|a|an|in|to|on|at|by|with|from|than|as|is|are|each|every)\b)[a-z-]+\s+)?"
COUNTED = re.compile(PROSE_SYMBOL + r"\s+" + FILLER + NOUN + r"(?:s|es)\b")  # a count is plural
NAMED = re.compile(r"\b" + NOUN + r"(s|es)?\s+(count\s+)?" + PROSE_SYMBOL)
INDEX = "index"


def sentences(source: str) -> list[str]:
    """A markdown cell's text, lines joined, each table row apart: a row of one symbol reads "$k$ gradient
    buckets" (its symbol and its meaning, the first cell after it not in code), then each of its other cells.

    >>> sentences("rank $r$ holds\\nchunk $r$\\n| $k$ | `k` | chunks |\\n| $n$, $Q$ | phases |")
    ['$k$ chunks', '`k`', 'chunks', 'phases', 'rank $r$ holds chunk $r$']
    """
    rows, prose = [], []
    for line in source.splitlines():
        if not line.lstrip().startswith("|"):
            prose.append(line)
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        meaning = next((cell for cell in cells[1:] if not cell.startswith("`")), "")
        if len(MATH.findall(cells[0])) == 1 and "," not in cells[0]:
            rows.append(f"{cells[0]} {meaning}")
        rows += cells[1:]
    return rows + [" ".join(" ".join(prose).split())]


def symbol_uses(paths) -> dict[str, dict[str, list[str]]]:
    """symbol -> the noun it counts, or INDEX -> where ("notebooks_py/02_nccl.py, markdown cell 12"), for every
    symbol the prose pairs with a noun."""
    uses: dict[str, dict[str, list[str]]] = {}
    for path in paths:
        for index, cell in enumerate(markdown_cells(read(path))):
            texts = sentences(cell)
            pairs = [(m.group(1), m.group(2)) for text in texts for m in COUNTED.finditer(text)]
            pairs += [
                (m.group(4), m.group(1) if m.group(2) or m.group(3) else INDEX)
                for text in texts
                for m in NAMED.finditer(text)
            ]
            for symbol, noun in pairs:
                uses.setdefault(symbol, {}).setdefault(noun, []).append(f"{path}, markdown cell {index}")
    return uses


def test_each_symbol_counts_one_thing_in_every_lesson_and_lab():
    """A symbol counts or numbers one thing across the lessons and the labs: what the glossary's entry lists (its
    ``nouns``; $p$, the one shared symbol, lists ranks and stages), or, for a symbol the glossary does not define,
    one thing wherever it appears."""
    entries, found = glossary_symbols(), []
    for symbol, nouns in sorted(symbol_uses(twins()).items()):
        entry = entries.get(symbol)
        allowed = set(entry.nouns) if entry is not None else None
        wrong = sorted(set(nouns) - allowed) if allowed is not None else sorted(nouns) if len(nouns) > 1 else []
        for noun in wrong:
            meaning = (
                f"the glossary gives it {', '.join(sorted(allowed)) or 'none of these'}"
                if allowed is not None
                else f"also {sorted(nouns)}"
            )
            use = "as an index" if noun == INDEX else f"counting {noun}"
            found.append(f"${symbol}$ {use} in {'; '.join(nouns[noun])}: {meaning}")
    assert found == [], (
        "a symbol with two meanings: rename it in the prose (the glossary, course_lib/glossary_entries.py, and the "
        "course map's notation table say which symbol means what)"
    )


MUTATIONS = [
    # (twin, text to replace, replacement, a phrase the report must contain)
    ("notebooks_py/01_mac.py", "| $l$ | `layers`", "| $L$ | `layers`", "notation table writes $l$"),
    ("notebooks_py/01_mac.py", "| $B_\\text{HBM}$ | `memory_bandwidth", "| $W$ | `memory_bandwidth", "$W$ is retired"),
    ("notebooks_py/01_mac.py", "Q_\\text{mem}/B_\\text{HBM}$", "Q_\\text{mem}/W$", "$W$ is retired"),
    ("notebooks_py/01_mac.py", "| $B_\\text{HBM}$ | `memory_bandwidth", "| $H$ | `memory_bandwidth", "is $B_HBM$"),
    (
        "notebooks_py/02_nccl.py",
        "fast NVLink inside a node of $G$ GPUs",
        "fast NVLink inside a node of $g$ GPUs",
        "$g$",
    ),
    (
        "notebooks_py/02_nccl.py",
        "fast NVLink inside a node of $G$ GPUs",
        "fast NVLink inside a node of $k$ GPUs",
        "$k$ with",
    ),
    ("notebooks_py/09_capstone.py", "$$\\Lambda(x) = \\max", "$$R(x) = \\max", "$R$ with"),
    ("notebooks_py/09_capstone.py", "stores $8h_\\text{ffn} = 28h$", "stores $8f = 28h$", "$f$ is retired"),
    ("notebooks_py/06_sequences_and_experts.py", "holding $n_\\text{tok}$ tokens", "holding $T$ tokens", "$T$ with"),
    (
        "notebooks_py/06_sequences_and_experts.py",
        "With $t_\\text{F}$, $t_\\text{B}$",
        "With $t_F$, $t_B$",
        "$t_{F}$ is used",
    ),
    ("notebooks_py/03_parallelism.py", "| $t_\\text{F}$, $t_\\text{bwd}$ |", "| $t_f$, $t_b$ |", "$t_{f}$ is retired"),
    ("notebooks_py/01_mac.py", "| $R$ | `peak_flops_per_s`", "| $R$ | `worst_slowdown`", "$R$ declared as"),
]


@pytest.mark.parametrize("path, old, new, report", MUTATIONS, ids=lambda x: x if len(x) < 30 else None)
def test_a_second_meaning_fails(path, old, new, report):
    # Each mutation brings back one of the second meanings; the check must name it.
    text = read(path)
    assert old in text, f"{path} no longer holds {old!r}: update the mutation"
    assert problems(path, text) == []
    found = problems(path, text.replace(old, new, 1))
    assert found, f"{path} with {new!r} passes"
    assert any(report in line for line in found), found

"""CYK parsing on gpudp: does a context-free grammar in Chomsky normal form derive a sentence, and
its parse tree in bracketed form.

    python examples/cyk_parse.py the dog saw a man in the park [--grammar english|parens] [--backend cpu]

A grammar in Chomsky normal form has rules ``A -> B C`` (two nonterminals) and ``A -> word``. Cell
``(i, j)`` of the interval table holds the set of nonterminals deriving words ``i..j``, as a bit mask
(bit ``A`` set when ``A`` derives them; int64: up to 63 nonterminals)::

    N(i, i) = { A : A -> w[i] }
    N(i, j) = { A : A -> B C, B in N(i, k), C in N(k + 1, j), for some i <= k < j }

The sentence is in the language when the start symbol is in ``N(0, n - 1)``. A parse tree's node is
an interval *and a nonterminal*, and a node's children depend on the nonterminal it derives, which
one decision per interval cannot hold: the walk carries the nonterminal as its state
(``traceback_state``), and ``back`` reads the finished table for a split ``k`` and a rule ``A -> B
C`` with ``B`` in ``N(i, k)`` and ``C`` in ``N(k + 1, j)``, giving the children the states ``B`` and
``C``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from gpudp import IntervalRecurrence, sweep

#: a toy English grammar (the start symbol's rules come first); ``|`` separates a symbol's rules
ENGLISH = """
S -> NP VP
NP -> Det N | NP PP | john | mary
VP -> V NP | VP PP | walked | slept
PP -> P NP
Det -> the | a
N -> dog | man | park | telescope
V -> saw | walked
P -> in | with
"""
#: balanced parentheses, nonempty: S -> ( S ) | S S | ( ), in Chomsky normal form
PARENS = """
S -> L R | L X | S S
X -> S R
L -> (
R -> )
"""
GRAMMARS = {"english": ENGLISH, "parens": PARENS}


class Grammar:
    """A grammar in Chomsky normal form read from text: one line a symbol, ``A -> B C | word | ...``;
    the first line's symbol is the start. ``names`` lists the nonterminals (start first),
    ``binary`` the rules ``A -> B C`` as rows of indices, ``lexicon`` each word's nonterminals."""

    def __init__(self, text: str):
        lines = [line.split("->") for line in text.strip().splitlines() if line.strip()]
        if any(len(parts) != 2 for parts in lines):
            raise ValueError("each line of a grammar is 'A -> B C | word | ...'")
        self.names = list(dict.fromkeys(head.strip() for head, _ in lines))
        if len(self.names) > 63:
            raise ValueError("at most 63 nonterminals (a cell's set is an int64 bit mask)")
        index = {name: k for k, name in enumerate(self.names)}
        binary, self.lexicon = [], {}
        for head, body in lines:
            a = index[head.strip()]
            for rule in body.split("|"):
                symbols = rule.split()
                if len(symbols) == 2 and all(x in index for x in symbols):
                    binary.append((a, index[symbols[0]], index[symbols[1]]))
                elif len(symbols) == 1 and symbols[0] not in index:
                    self.lexicon.setdefault(symbols[0], set()).add(a)
                else:
                    raise ValueError(f"{head.strip()} -> {rule.strip()}: not A -> B C nor A -> word")
        self.binary = np.array(binary, np.int64).reshape(-1, 3)

    def leaves(self, words) -> np.ndarray:
        """Each word's nonterminals, a bit mask a word; ``ValueError`` for a word no rule derives."""
        unknown = [w for w in words if w not in self.lexicon]
        if unknown:
            raise ValueError(f"no rule derives the word {unknown[0]!r}")
        return np.array([sum(1 << a for a in self.lexicon[w]) for w in words], np.int64)


class CYK(IntervalRecurrence):
    value_dtype = np.int64  # the set of nonterminals deriving the interval, a bit each
    traceback_state = True  # a parse tree's node carries the nonterminal it derives

    def __init__(self, leaf, rules):
        self.leaf = np.asarray(leaf, np.int64)  # leaf[i]: the nonterminals deriving word i, a mask
        self.rules = np.asarray(rules, np.int64).reshape(-1, 3)  # rows (A, B, C): A -> B C

    def size(self):
        return len(self.leaf)

    def data(self):
        return (self.leaf, self.rules)

    @staticmethod
    def cell(i, j, T, leaf, rules):
        if i == j:
            return leaf[i]
        found = 0
        for k in range(i, j):
            left, right = T[i, k], T[k + 1, j]
            for r in range(rules.shape[0]):
                if (left >> rules[r, 1]) & 1 and (right >> rules[r, 2]) & 1:
                    found |= 1 << rules[r, 0]
        return found

    @staticmethod
    def back(i, j, decision, a, T, leaf, rules):
        if i == j:
            return -1, -1, 0, -1, -1, 0  # a leaf: a -> word i
        for k in range(i, j):  # the first split and rule by which a derives i..j
            left, right = T[i, k], T[k + 1, j]
            for r in range(rules.shape[0]):
                if rules[r, 0] == a and (left >> rules[r, 1]) & 1 and (right >> rules[r, 2]) & 1:
                    return i, k, rules[r, 1], k + 1, j, rules[r, 2]
        return -1, -1, 0, -1, -1, 0  # a does not derive i..j: the caller starts only where it does


def bracketed(rows, names, words) -> str:
    """The tree as text, ``(S (NP john) (VP slept))``, from its preorder rows ``(i, j, decision,
    nonterminal)``: a node of one word is ``(A word)``, any other ``(A left right)``."""
    out, ends = [], []
    for i, j, _, a in rows:
        out.append(f"({names[a]}" + (f" {words[i]})" if i == j else ""))
        if i < j:
            ends.append(j)  # this node closes after its last word, j
            continue
        while ends and ends[-1] == i:
            out[-1] += ")"
            ends.pop()
    return " ".join(out)


def parse(grammar: Grammar, words, **sweep_options):
    """The parse tree of ``words`` (rows ``(i, j, decision, nonterminal)`` in preorder) or None
    when the start symbol does not derive them, and the sweep's statistics. ``sweep_options`` go
    to :func:`gpudp.sweep`."""
    result = sweep(CYK(grammar.leaves(words), grammar.binary), **sweep_options)
    n = len(words)
    if n == 0 or not (int(result.value(0, n - 1)) & 1):  # the start symbol is nonterminal 0
        return None, result.stats
    return result.traceback_tree((0, n - 1), state=0), result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="CYK parsing on gpudp")
    parser.add_argument("words", nargs="+", help="the sentence, one word an argument")
    parser.add_argument("--grammar", default="english", choices=sorted(GRAMMARS))
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    grammar = Grammar(GRAMMARS[args.grammar])
    try:
        tree, stats = parse(grammar, args.words, backend=args.backend)
    except ValueError as e:
        parser.error(str(e))
    if tree is None:
        print(f"not in the language ({stats.backend} backend)")
        sys.exit(1)
    print(f"parsed {len(args.words)} words ({stats.backend} backend)")
    print(bracketed(tree, grammar.names, args.words))


if __name__ == "__main__":
    main()

"""The child process behind :class:`~.equivalence.SympyEquivalence` (run as a script, so it
imports SymPy and nothing of ``iclr24``).

Protocol: one JSON object per line on stdin, ``{"op": "minerva" | "math_verify", "pred": str,
"gold": str, "timeout": float}``; one JSON line back, ``{"equivalent": bool, "status": str}``.
It prints ``{"ready": true}`` once SymPy's LaTeX parser has loaded.

``minerva`` follows the Llemma fork's ``is_tex_equiv`` (wellecks/lm-evaluation-harness,
``lm_eval/mixins.py``) after the string comparison the parent already made: parse the gold with
``sympy.parsing.latex.parse_latex`` under a timeout; a gold that does not parse, or parses to
a falsy SymPy object (a zero: the official ``if not parsed_x2`` test), is not equivalent; parse
the prediction likewise (a failure counts as not equivalent); then ``simplify(pred - gold) ==
0`` under a timeout. Every SymPy error counts as not equivalent. The timeouts are SIGALRM
timers, as officially; they work here because this is a process's main thread.

``math_verify`` runs Hugging Face's ``math_verify.verify(parse(gold), parse(pred))`` (its own
normalisation and extraction; the answers are wrapped in ``$...$`` when they carry no TeX
delimiter) with its own timeouts set to the same budget.
"""

import json
import signal
import sys


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def _limited(fn, seconds):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _minerva(pred, gold, seconds):
    import sympy
    from sympy.parsing.latex import parse_latex

    def parse(text):
        try:
            return _limited(lambda: parse_latex(text), seconds), "ok"
        except _Timeout:
            return None, "timeout"
        except Exception:  # noqa: BLE001 - the official parse_tex catches everything
            return None, "unparsable"

    parsed_gold, why = parse(gold)
    try:
        falsy = parsed_gold is None or not parsed_gold
    except TypeError:  # a relation has no truth value; the official code would raise here
        falsy = False
    if falsy:
        return False, "gold_" + (why if parsed_gold is None else "zero")
    parsed_pred, why = parse(pred)
    if parsed_pred is None:
        return False, "pred_" + why
    try:
        same = _limited(lambda: sympy.simplify(parsed_pred - parsed_gold) == 0, seconds)
    except _Timeout:
        return False, "simplify_timeout"
    except Exception:  # noqa: BLE001 - any SymPy failure means "not equivalent", officially
        return False, "simplify_error"
    return bool(same), "sympy_equal" if same else "sympy_different"


def _wrap(text):
    return text if ("$" in text or "\\boxed" in text or "\\(" in text) else f"${text}$"


def _math_verify(pred, gold, seconds):
    from math_verify import parse, verify

    t = max(1, round(seconds))
    try:
        g = parse(_wrap(gold), parsing_timeout=t)
        p = parse(_wrap(pred), parsing_timeout=t)
        ok = verify(g, p, timeout_seconds=t)
    except Exception:  # noqa: BLE001 - a checker failure counts as "not verified"
        return False, "error"
    return bool(ok), "verified" if ok else "not_verified"


def main():
    signal.signal(signal.SIGALRM, _on_alarm)
    from sympy.parsing.latex import parse_latex

    parse_latex("1")  # load the ANTLR parser before saying ready
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        fn = _minerva if req["op"] == "minerva" else _math_verify
        try:
            ok, status = fn(req["pred"], req["gold"], float(req["timeout"]))
        except _Timeout:
            ok, status = False, "timeout"
        out.write(json.dumps({"equivalent": ok, "status": status}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

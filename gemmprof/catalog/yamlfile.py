"""Reading the YAML files gemmprof takes (GPU specs, kernel specs): a mapping, or one line naming file and line.

Anchors and aliases (&name, *name) are refused: gemmprof's files never need them, and a few hundred bytes of nested
aliases (a "billion laughs" bomb) expand to more nodes than memory holds. The check scans tokens, which costs
time linear in the text and expands nothing."""

from __future__ import annotations

from pathlib import Path

import yaml

from gemmprof.errors import InputError


def parse_mapping(path: Path, text: str, error: type[InputError]) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present
    try:
        for token in yaml.scan(text, Loader=loader):
            if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
                sign = "&" if isinstance(token, yaml.AnchorToken) else "*"
                raise error(f"{path}: line {token.start_mark.line + 1}: YAML anchors and aliases ({sign}"
                            f"{str(token.value)[:30]}) are not accepted in gemmprof files; write the value out")
        doc = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{path}:{where} malformed YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a gemmprof file") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4300): damage, never a value
        raise error(f"{path}: malformed YAML: a number too long to be a value ({str(exc)[:60]})") from None
    if not isinstance(doc, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return doc

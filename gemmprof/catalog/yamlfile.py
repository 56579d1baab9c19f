"""Reading the YAML files gemmprof takes (GPU specs, kernel specs): a mapping, or one line naming file and line."""

from __future__ import annotations

from pathlib import Path

import yaml

from gemmprof.errors import InputError


def parse_mapping(path: Path, text: str, error: type[InputError]) -> dict:
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{path}:{where} malformed YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a gemmprof file") from None
    if not isinstance(doc, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return doc

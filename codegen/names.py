"""A model's name and everything derived from it: its C prefix, macro prefix, files, CMake target and Make variables.

- The name is a lowercase C identifier (NAME_RULE): `kws` gives kws_run, KWS_ARENA_BYTES, kws.h, kws.c,
  kws_weights.c, the CMake target mcu_kws and the Make variables MCU_KWS_*. Lowercase only, so that two names
  never share the upper-case macro prefix; `mcu...` is the runtime's, so it is refused.
- The default name `model` keeps the files a package always had (model.h, model.c, weights.c, mcu_model.mk).
"""
from __future__ import annotations

import re

from mcu.codegen.errors import McuError

DEFAULT_NAME = "model"
MAX_NAME = 32
NAME_RULE = (f"a model name is a lowercase C identifier of at most {MAX_NAME} characters: a letter, then letters, "
             f"digits or '_' (e.g. kws, wake_word2), neither a C keyword nor starting with 'mcu' (the runtime's "
             f"prefix)")
_NAME = re.compile(rf"[a-z][a-z0-9_]{{0,{MAX_NAME - 1}}}\Z")
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while""".split())


def is_valid_name(name) -> bool:
    """True when `name` follows NAME_RULE."""
    return (isinstance(name, str) and bool(_NAME.match(name)) and name not in C_KEYWORDS
            and not name.startswith("mcu"))


def check_name(name) -> str:
    """`name` if it follows NAME_RULE, else one McuError that states the rule."""
    if not is_valid_name(name):
        raise McuError(f"name={str(name)[:40]!r} is not a valid model name: {NAME_RULE}")
    return name


def model_files(name: str) -> tuple[str, str, str]:
    """The generated files of model `name`: its header, its calls and its weights."""
    return f"{name}.h", f"{name}.c", "weights.c" if name == DEFAULT_NAME else f"{name}_weights.c"


def make_prefix(name: str) -> str:
    """The prefix of the drop-in Make variables and the CMake target, upper case: MCU_KWS (target mcu_kws)."""
    return f"MCU_{name.upper()}"

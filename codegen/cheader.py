"""The C contract of the kernels' params structs, read from runtime_c/include/mcu (mcu_types.h, mcu_kernels.h), so
emit can check every baked params struct before it writes C: a field the struct lacks, an array longer than the
struct's, or a nested struct given as the wrong shape is a compiler bug named here (IRError), never a C compile
error in the user's build."""
from __future__ import annotations

import functools
import re
from importlib import resources

from mcu.codegen.ir import IRError

HEADERS = ("mcu_types.h", "mcu_kernels.h")
SCALARS = {"int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "float"}


@functools.cache
def structs() -> dict[str, dict[str, tuple[str, int | None]]]:
    """{struct name: {field: (type, array length or None)}} of every params struct."""
    include = resources.files("mcu.runtime_c") / "include" / "mcu"
    text = "\n".join((include / h).read_text() for h in HEADERS)
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    found: dict[str, dict[str, tuple[str, int | None]]] = {}
    for body, name in re.findall(r"typedef\s+struct\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        fields = {}
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            m = re.fullmatch(r"(?:const\s+)?(\w+)\s+(.+)", decl, flags=re.S)
            for item in m.group(2).split(","):
                f = re.fullmatch(r"\s*\*?\s*(\w+)\s*(?:\[(\w+)\])?\s*", item)
                fields[f.group(1)] = (m.group(1), int(f.group(2)) if f.group(2) and f.group(2).isdigit() else
                                      (0 if f.group(2) else None))
        found[name] = fields
    return found


def check_params(params_type: str, params: dict, where: str) -> None:
    """Raise IRError when `params` cannot initialize C struct `params_type`."""
    fields = structs().get(params_type)
    if fields is None:
        raise IRError(f"{where}: params struct {params_type} is not declared in mcu_kernels.h")
    for key, value in params.items():
        if key not in fields:
            raise IRError(f"{where}: {params_type} has no field {key!r}")
        ctype, length = fields[key]
        if ctype in structs():
            sub = structs()[ctype]
            if isinstance(value, dict):
                check_params(ctype, value, where)
            elif not isinstance(value, (tuple, list)) or len(value) != len(sub):
                raise IRError(f"{where}: {params_type}.{key} ({ctype}) takes {len(sub)} values, got {value!r}")
        elif length is not None:
            if not isinstance(value, (tuple, list)) or (length and len(value) > length):
                raise IRError(f"{where}: {params_type}.{key} is an array of {length}, got {value!r}")
        elif isinstance(value, (tuple, list, dict)):
            raise IRError(f"{where}: {params_type}.{key} is one {ctype}, got {value!r}")

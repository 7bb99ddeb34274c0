"""Import torchao without its import-time noise: every import logs a warning for each optional CUDA
extension it cannot load and for a torch deprecation, none of which matter on a CPU. Import this
module before any torchao module."""
import logging

for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)

import torchao  # noqa: E402,F401

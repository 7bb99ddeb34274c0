"""Build: a compiled package -> binaries and their measurements. firmware.py runs SCons (firmware.scons) for a board,
host.py builds the model's C for the PC under sanitizers, dropin.py writes the package's drop-in build files; fit.py
(will it fit the board, before any C is built), elfsize.py (flash/RAM split of a built ELF), stack.py (worst-case stack
depth) and softfloat.py (what float32 costs without an FPU) measure."""

"""Composite ops by family, each decomposition a function (b, n) -> Node: n the composite node, b the
mcu.importer.decompose.Builder that inserts primitives before it (b.island names a float statistic; b.tensor reads a
constant; b.refuse makes the error for an unsupported form). Each family's DECOMPOSITIONS maps ops to their
decomposition: arith.py (fmax, fmin, log2, exp2, lerp), norms.py (norms and statistics), layers.py (clamp by tensors, PReLU, attention, cumsum, gathers,
bilinear), spatial.py (transposed convs, resampling, adaptive max pools, im2col), indexing.py (gather, scatter, slice_scatter, select_scatter with constant indices), logic.py (comparisons, logical ops, where). A new composite
goes into its family's file and table, and into mcu.importer.ops.COMPOSITE_OPS. These files import nothing of mcu."""

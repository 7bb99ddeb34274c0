"""Import: a user's nn.Module, ExportedProgram or .pt2 -> a checked torch.export graph (export.py), its composite ops
decomposed (decompose.py) and rewritten (rewrites.py), then, after quantization, -> mcu IR: from_quantized.py for a
converted PT2E graph (integer tensors), from_float.py for a float one. ops.py holds the op tables every step shares."""

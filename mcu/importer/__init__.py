"""Import: a user's nn.Module, ExportedProgram or .pt2 -> a checked torch.export graph (export.py) with its views
rewritten (rewrites.py), its composite ops decomposed (decompose.py) and BatchNorms folded (batch_norms.py), then,
after quantization, -> mcu IR: from_quantized.py for a converted PT2E graph (integer tensors), from_float.py for a
float one, both naming IR ops and attrs through op_attrs.py. ops.py holds the op tables every step shares."""

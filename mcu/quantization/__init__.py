"""Quantization: an exported float graph + calibration data -> torchao's converted PT2E graph (Q/DQ around float ops).
observers.py: the activation and weight observers and qspecs; quantizer.py: McuQuantizer, which ops get which qspec;
calibrate.py: quantize() (prepare, calibrate, bias correction, convert); precision.py: the per-layer int8 / a16w8 /
float32 search behind target_sqnr."""

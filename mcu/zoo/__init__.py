"""Bundled models, each a function returning (model, example_inputs) with seeded weights."""
from mcu.zoo.blocks import (BLOCKS, convt_decoder, ghost, gru_kws, linear_attention, mbv3, mobilevit,
                             shuffle)
from mcu.zoo.deep import DEEP, mnasnet_se, mobilenet_v2
from mcu.zoo.example import example_cnn
from mcu.zoo.mlperf_tiny import MODELS, ad, calibration_set, ic, kws, macs, vww
from mcu.zoo.sequence import SEQUENCE, bwe, kws_stream, lid, sequence_calibration, tinyllama_step

__all__ = ["example_cnn", "kws", "vww", "ic", "ad", "MODELS", "calibration_set", "macs", "BLOCKS", "mbv3", "ghost",
           "shuffle", "mobilevit", "linear_attention", "gru_kws", "convt_decoder", "DEEP", "mobilenet_v2", "mnasnet_se",
           "SEQUENCE", "kws_stream", "lid", "bwe", "tinyllama_step", "sequence_calibration"]

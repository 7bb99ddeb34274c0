/* harness_model.h: the model under test under the names the harness uses (model_run_v, MODEL_*), whatever its name.
 *
 * The build (mcu/build/firmware.py: harness_defines) passes MCU_MODEL_HEADER ("kws.h"), MCU_MODEL_NAME (kws) and
 * MCU_MODEL_MACRO (KWS) for a model not named `model`; without them the harness includes model.h as it is.
 * MCU_MODEL_STATE is defined for a model that keeps state between calls.
 */
#ifndef MCU_HARNESS_MODEL_H
#define MCU_HARNESS_MODEL_H

#ifdef MCU_MODEL_HEADER
#include MCU_MODEL_HEADER

#define MCU_HARNESS_CAT_(a, b) a##b
#define MCU_HARNESS_CAT(a, b) MCU_HARNESS_CAT_(a, b)
#define MODEL_NUM_INPUTS MCU_HARNESS_CAT(MCU_MODEL_MACRO, _NUM_INPUTS)
#define MODEL_NUM_OUTPUTS MCU_HARNESS_CAT(MCU_MODEL_MACRO, _NUM_OUTPUTS)
#define MODEL_INPUTS_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _INPUTS_BYTES)
#define MODEL_OUTPUTS_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _OUTPUTS_BYTES)
#define MODEL_ARENA_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _ARENA_BYTES)
#define MODEL_ARENA_ALIGN MCU_HARNESS_CAT(MCU_MODEL_MACRO, _ARENA_ALIGN)
#define MODEL_ARENA_GUARD_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _ARENA_GUARD_BYTES)
#define model_input_bytes MCU_HARNESS_CAT(MCU_MODEL_NAME, _input_bytes)
#define model_output_bytes MCU_HARNESS_CAT(MCU_MODEL_NAME, _output_bytes)
#define model_run_v MCU_HARNESS_CAT(MCU_MODEL_NAME, _run_v)
#ifdef MCU_MODEL_STATE
#define MODEL_STATE_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _STATE_BYTES)
#define MODEL_OUTPUT0_BYTES MCU_HARNESS_CAT(MCU_MODEL_MACRO, _OUTPUT0_BYTES)
#define model_generate MCU_HARNESS_CAT(MCU_MODEL_NAME, _generate)
#define model_generate_sampled MCU_HARNESS_CAT(MCU_MODEL_NAME, _generate_sampled)
#define model_rng_seed MCU_HARNESS_CAT(MCU_MODEL_NAME, _rng_seed)
#define model_on_token MCU_HARNESS_CAT(MCU_MODEL_NAME, _on_token)
#endif
#else
#include "model.h"
#endif

/* A model with state (MCU_MODEL_STATE, from the build) takes the state region last; MODEL_RUN_V hides the
 * difference from the harness, whose state buffer is then MODEL_STATE_BYTES long (0 without state). */
#ifdef MCU_MODEL_STATE
#define MODEL_RUN_V(inputs, outputs, arena, state) model_run_v(inputs, outputs, arena, state)
#else
#define MODEL_STATE_BYTES 0u
#define MODEL_RUN_V(inputs, outputs, arena, state) model_run_v(inputs, outputs, arena)
#endif

#endif /* MCU_HARNESS_MODEL_H */

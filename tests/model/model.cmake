# Program-running tests of the model area (included by tests/CMakeLists.txt).
#
# model.llama_reference       weft's llama logits against an independent numpy forward pass
#                             written from the published LLaMA architecture (tests/model/
#                             llama_reference.py); skips (77) without numpy.
# demo.train_llama_shortened  the main demo with the llama-small preset: the validation loss
#                             must reach its own goal; the output prints loss, goal and margin
#                             (measured margins in docs/models.md).
# fail_once.<name>            a tests/fail/ file fails with exactly one error, the expected one.

# ---- a python3 that has numpy: the first python3 on the PATH, else the system one ----
find_program(WEFT_PYTHON python3)
set(WEFT_NUMPY_PYTHON "")
foreach(candidate IN ITEMS "${WEFT_PYTHON}" /usr/bin/python3)
  if(candidate AND EXISTS "${candidate}" AND NOT WEFT_NUMPY_PYTHON)
    execute_process(COMMAND "${candidate}" -c "import numpy" RESULT_VARIABLE _weft_rc OUTPUT_QUIET ERROR_QUIET)
    if(_weft_rc EQUAL 0)
      set(WEFT_NUMPY_PYTHON "${candidate}")
    endif()
  endif()
endforeach()
if(NOT WEFT_NUMPY_PYTHON)
  set(WEFT_NUMPY_PYTHON "${WEFT_PYTHON}")  # the script then exits 77: a visible skip
endif()

# ---- the independent LLaMA reference ----
add_executable(llama_reference_sample ${CMAKE_CURRENT_SOURCE_DIR}/model/llama_reference_sample.cpp)
target_link_libraries(llama_reference_sample PRIVATE weft::host)
if(WEFT_NUMPY_PYTHON)
  add_test(NAME model.llama_reference
           COMMAND ${WEFT_NUMPY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/model/llama_reference.py all
                   $<TARGET_FILE:llama_reference_sample> ${CMAKE_CURRENT_BINARY_DIR}/llama_reference)
  # The script exits 0 only after "llama reference: OK", 1 on a mismatch, 77 without numpy.
  set_tests_properties(model.llama_reference PROPERTIES LABELS model SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
else()
  message(STATUS "weft: no python3 - the LLaMA reference cross-check is skipped")
endif()

# ---- the LLaMA demo, shortened, with its own loss goal ----
if(TARGET train_gpt)
  # Exit status and the goal line both checked (cmake/run_expect.cmake).
  add_test(NAME demo.train_llama_shortened
           COMMAND ${CMAKE_COMMAND}
                   "-DCOMMAND=$<TARGET_FILE:train_gpt>|--preset|llama-small|--steps|800|--eval-every|400|--eval-batches|16|--quiet|--sample|80|--checkpoint|${CMAKE_CURRENT_BINARY_DIR}/demo_llama_checkpoint|--log|${CMAKE_CURRENT_BINARY_DIR}/demo_llama_metrics.jsonl|--expect-val-loss|2.0"
                   "-DEXPECT=loss goal: .* \\(met\\)" -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
  set_tests_properties(demo.train_llama_shortened PROPERTIES LABELS demo TIMEOUT 1200
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
endif()

# ---- each structural mistake is reported once: exactly one error, the expected one ----
foreach(stem IN ITEMS layer_missing_in_width layer_missing_out_width layer_missing_param_count
                      layer_missing_kept_count layer_missing_scratch_count layer_missing_find_param
                      layer_missing_visit_params layer_missing_forward layer_missing_backward
                      attention_width_not_divisible_by_heads attention_zero_heads
                      causal_attention_rope_odd_head_size gpt_width_not_divisible_by_heads
                      llama_heads_not_divisible_by_kv_heads llama_odd_head_size
                      tensor_parallel_user_layer_without_form partition_unknown_layer_under_tp
                      recompute_selective_opaque_layer plan_user_layer_without_tp_form
                      moe_topk_exceeds_experts moe_unknown_option moe_experts_not_divisible_by_ep
                      moe_gpt_width_mismatch plan_expert_parallel_without_moe plan_experts_not_divisible_by_ep
                      make_training_step_ep_without_all_to_all distributed_step_ep_without_all_to_all
                      neox_config_missing_hyper_parameter neox_width_not_divisible_by_heads neox_config_llama_tag
                      neox_norm_eps_out_of_range neox_rope_theta_below_two neox_rotary_pct_out_of_range
                      neox_rotary_dims_odd gemma3_missing_hyper_parameter gemma3_heads_not_divisible_by_kv_heads
                      gemma3_odd_head_dim gemma3_query_pre_attn_scalar gemma3_zero_pattern gemma3_zero_window
                      gemma3_rope_theta_below_two gemma3_local_base_below_two gemma3_norm_eps_out_of_range
                      gemma3_foreign_tag)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fail/${stem}.cpp)
    add_test(NAME fail_once.${stem}
             COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/fail/${stem}.cpp
                     -DINCLUDE=${PROJECT_SOURCE_DIR}/include -P ${CMAKE_CURRENT_SOURCE_DIR}/model/check_single_error.cmake)
    set_tests_properties(fail_once.${stem} PROPERTIES LABELS "fail" TIMEOUT 300)
  endif()
endforeach()
